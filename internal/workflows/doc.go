// Package workflows holds the tests of .github/workflows and of the
// scripts of hack/ci their steps run: each script runs with bash on real
// inputs (two commits' pins, the gate's exit codes, bad workflow inputs),
// and every run: step stays one line, a call of a script.
package workflows
