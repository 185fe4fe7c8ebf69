// Package hostlist expands Slurm hostlist expressions such as
// "gpu-[001-004,010],login1" into host names, in Go, so that `parc launch`
// can find the master address from SLURM_JOB_NODELIST without scontrol. It is
// part of the launcher (the runtime side of parc), not of the compiler.
package hostlist
