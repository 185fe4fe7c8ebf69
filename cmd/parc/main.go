// Command parc compiles distributed-training plans. See README.md.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
