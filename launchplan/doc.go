// Package launchplan is the launch.json file format: its types, encoder,
// decoder and JSON Schema. `parc compile` writes it (built by the launchjson
// target) and `parc launch` reads it. It imports nothing of the compiler, so
// the runtime side stays small.
package launchplan
