// Package launchplan is the launch.json target: the per-node worker plan and
// every process group, written by `parc compile` and read by `parc launch`.
package launchplan
