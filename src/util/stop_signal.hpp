// SIGUSR1 (SLURM's warning before the time limit, `#SBATCH --signal=USR1@LEAD`) and SIGTERM
// (scancel, preemption, the limit itself) ask for a checkpointed stop instead of ending the
// process where it stands. A thread of their own records them (no handler interrupts the threads
// that compute: stop_signal.cpp says why); the training loop polls at each step boundary, and all
// ranks agree on it collectively (comm/stop_vote). The same signal again, more than a few seconds
// later and before the stop was agreed, ends the process the default way (a stuck start-up can
// still be killed); once the stop is agreed, further signals are ignored (srun --kill-on-bad-exit
// sends SIGTERM to the ranks still finishing the checkpoint when the first one exits).
#pragma once

#include <string>

namespace ddpt {

// Blocks the two signals in the calling thread and in every thread started after it, and starts
// the thread that records them (idempotent). main() does it for `train` and `generate` before
// MPI_Init and before any other thread, so a signal during start-up stops the run after its first
// step (or batch); other subcommands keep the default actions. A child process must unblock them
// (h5/h5_probe.cpp).
void install_stop_signal_handlers();

// The first stop signal received (SIGUSR1 or SIGTERM), 0 if none. Cheap to read.
int pending_stop_signal() noexcept;

// The ranks agreed to stop: from now on stop signals are ignored.
void mark_stopping() noexcept;

// "SIGUSR1", "SIGTERM", or "signal N".
std::string signal_name(int signal_number);

}  // namespace ddpt
