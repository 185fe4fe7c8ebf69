// Package launchjson is the launch.json target: it builds the per-node
// worker plan and every process group from a layout. The file format itself
// (types, encoding, JSON Schema) is package parc.dev/parc/launchplan, which
// the launcher reads without depending on the compiler.
package launchjson
