#pragma once
// The benchmarks of ddptrain-bench (bench_main.cpp), one per file of this folder: each takes its
// own arguments as a program would (argv[0] is the benchmark's name) and returns the exit code.
// One executable, so that the torch headers are compiled once for all of them.

namespace ddpt::bench {

int run_attention(int argc, char** argv);   // attention_step.cpp
int run_checkpoint(int argc, char** argv);  // checkpoint_io.cpp (under mpirun)
int run_copy_sum(int argc, char** argv);    // copy_sum.cpp
int run_gpt_ops(int argc, char** argv);     // gpt_op_profile.cpp
int run_linear(int argc, char** argv);      // linear_step.cpp
int run_optimizer(int argc, char** argv);   // optimizer_step.cpp

}  // namespace ddpt::bench
