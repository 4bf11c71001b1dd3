// SIGUSR1 (SLURM's warning before the time limit, `#SBATCH --signal=USR1@LEAD`) and SIGTERM
// (scancel, preemption, the limit itself) ask for a checkpointed stop instead of ending the
// process where it stands. The handler only records the signal; the training loop polls it at
// each step boundary, and all ranks agree on it collectively (comm/stop_vote). The same signal
// again, more than a few seconds later and before the stop was agreed, ends the process the
// default way (a stuck start-up can still be killed); once the stop is agreed, further signals
// are ignored (srun --kill-on-bad-exit sends SIGTERM to the ranks still finishing the checkpoint
// when the first one exits).
#pragma once

#include <string>

namespace ddpt {

// Installs the handlers (idempotent). main() does it for `train` before MPI_Init, so a signal
// during start-up stops the run after its first step; other subcommands keep the default actions.
void install_stop_signal_handlers();

// The last stop signal received (SIGUSR1 or SIGTERM), 0 if none. Async-signal-safe to set,
// cheap to read.
int pending_stop_signal() noexcept;

// The ranks agreed to stop: from now on stop signals are ignored.
void mark_stopping() noexcept;

// "SIGUSR1", "SIGTERM", or "signal N".
std::string signal_name(int signal_number);

}  // namespace ddpt
