package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// check refuses, exit 2 naming the flag, what a run would refuse before it
// builds anything, and accepts what would run.
func TestCheckNamesTheBadFlag(t *testing.T) {
	var out, errb bytes.Buffer
	for _, tc := range []struct {
		args []string
		want string // "" when the flags would run
	}{
		{[]string{"-sidecar", "caddy@v2.10.2", "-candidate", "caddy@v2.11.9", "-max-count", "30"}, ""},
		{[]string{"-candidate", "caddy+access-log", "-count", "3", "-max-count", "6"}, ""},
		{[]string{"-target", "kind", "-mesh", "istio", "-mesh-install", "-mesh-version", "1.28.0", "-store-reference", "-count", "6"}, ""},
		{[]string{"-candidate", "caddy@latest"}, `check: -sidecar/-candidate: candidate: sidecar "caddy@latest": version "latest" is not an exact module version; want e.g. caddy@v2.10.2`},
		{[]string{"-candidate", "caddy", "-max-count", "4", "-count", "6"}, "check: -max-count=4: must be at least -count (6), or 0"},
		{[]string{"-candidate", "caddy", "-max-count", "2"}, "check: -max-count=2: must be at least -count (3), or 0"},
		{[]string{"-reference", "r.json", "-max-count", "5"}, "check: -max-count=5: must be at least -count (6), or 0"},
		{[]string{"-max-count", "x"}, `check: invalid value "x" for flag -max-count: parse error`},
		{[]string{"-count", "-1"}, "check: -count=-1: a number of rounds, at least 1"},
		{[]string{"-candidate", "caddy", "-gate-mode", "duet", "-gate-seed", "7"}, ""},
		{[]string{"-candidate", "caddy", "-gate-mode", "sequential"}, ""},
		{[]string{"-candidate", "caddy", "-gate-mode", "trio"}, `check: invalid value "trio" for flag -gate-mode: want sequential, duet or open-duet`},
		{[]string{"-gate-mode", "duet"}, "check: -gate-mode=duet: needs -candidate: a duet runs the reference and the candidate at the same time, in this run"},
		{[]string{"-target", "kind", "-candidate", "+no-keepalive", "-gate-mode", "duet"}, ""},
		{[]string{"-target", "kind", "-reference", "r.json", "-gate-mode", "duet"}, "check: -gate-mode=duet: not with -reference or -store-reference: a stored run cannot run at the same time as this one"},
		{[]string{"-candidate", "caddy", "stray"}, "check: unexpected argument \"stray\": benchmark flags start with -\n" + usage},
	} {
		err := run(context.Background(), append([]string{"check"}, tc.args...), &out, &errb)
		if tc.want == "" {
			assert.NoError(t, err, "%v", tc.args)
			continue
		}
		assert.EqualError(t, err, tc.want, "%v", tc.args)
		assert.Equal(t, 2, exitCode(err, &errb), "%v", tc.args)
	}
}
