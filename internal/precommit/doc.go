// Package precommit holds the test of the repository's pre-commit hook
// (.pre-commit-hooks.yaml): Debian's pre-commit builds parc from this
// repository and runs `parc vet` on a sample repository's plans. It has no
// code of its own; the hook is part of no compiler stage.
package precommit
