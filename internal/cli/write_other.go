//go:build !linux

package cli

import "io/fs"

// renameExchange: only Linux has renameat2; elsewhere the journal is used.
func renameExchange(a, b string) error { return errNoExchange }

// ownGroup: without Linux's stat, assume the directory cannot be recreated
// as it was (the journal is used).
func ownGroup(st fs.FileInfo) (int, bool) { return -1, false }

func lockDir(dir string) (unlock func()) { return func() {} }

func cwdInside(dir string) bool { return true }
