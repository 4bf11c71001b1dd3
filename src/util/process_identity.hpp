// Who this process is (rank and host), for error messages and log prefixes.
// Set once by MpiEnv; until then the rank reads as -1.
#pragma once

#include <string>

namespace ddpt {

void set_process_identity(int world_rank, const std::string& host);
const std::string& process_host();
// "[rank R host]": the prefix every non-rank-0 message carries.
std::string process_tag();

}  // namespace ddpt
