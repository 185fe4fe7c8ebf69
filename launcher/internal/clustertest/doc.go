// Package clustertest holds the launcher's end-to-end test on the local
// Slurm cluster: a plan compiled by parc's pipeline, its submit.sbatch in
// `parc launch` mode, and real PyTorch gloo workers. It is a separate
// package so that the launcher's own test binary (which doubles as the test
// workers) does not link the compiler. It has no code of its own.
package clustertest
