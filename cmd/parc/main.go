// Command parc compiles distributed-training plans. See README.md.
package main

import (
	"os"

	"parc.dev/parc/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
