// Package cli is parc's command line: each command parses its flags, calls the
// compiler (a pure function), then renders the result for a human or as JSON
// and writes files. It is the only place that touches the terminal and disk.
package cli
