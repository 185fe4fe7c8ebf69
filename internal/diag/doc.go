// Package diag holds the diagnostics every compiler stage reports: a severity,
// a stable code, the spec field blamed (its path and its position in the user's
// file), a plain message with the numbers involved, and a fix hint.
//
// Stages never stop at the first problem: they append to a List and go on, and
// the CLI prints the whole list at once (the esbuild "log" pattern).
package diag
