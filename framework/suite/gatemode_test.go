package suite_test

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/suite"
	"github.com/meshbench/meshbench/framework/testbed"
)

// -gate-mode is duet by default where a duet can run (a candidate in the
// run on the local target), else sequential; duet draws its order seed
// unless -gate-seed gives it.
func TestGateModeFlag(t *testing.T) {
	cfg, err := normalize(t)
	require.NoError(t, err)
	assert.Equal(t, testbed.Sequential, cfg.GateMode, "the default without a candidate")
	assert.Zero(t, cfg.GateSeed, "no seed without a duet")

	cfg, err = normalize(t, "-candidate", "caddy")
	require.NoError(t, err)
	assert.Equal(t, testbed.Duet, cfg.GateMode, "the default of a local gate")
	assert.NotZero(t, cfg.GateSeed)
	cfg, err = normalize(t, "-target", "kind", "-candidate", "+no-keepalive")
	require.NoError(t, err)
	assert.Equal(t, testbed.Sequential, cfg.GateMode, "the default on a cluster")
	cfg, err = normalize(t, "-store-reference")
	require.NoError(t, err)
	assert.Equal(t, testbed.Sequential, cfg.GateMode, "the default when storing a reference")

	cfg, err = normalize(t, "-candidate", "caddy", "-gate-mode", "sequential")
	require.NoError(t, err)
	assert.Equal(t, testbed.Sequential, cfg.GateMode)

	cfg, err = normalize(t, "-candidate", "caddy", "-gate-mode=duet")
	require.NoError(t, err)
	assert.Equal(t, testbed.Duet, cfg.GateMode)
	assert.NotZero(t, cfg.GateSeed, "a drawn seed, recorded in the settings")

	cfg, err = normalize(t, "-candidate", "caddy", "-gate-mode=duet", "-gate-seed", "7")
	require.NoError(t, err)
	assert.Equal(t, uint64(7), cfg.GateSeed, "a given seed replays a run's orders")
}

// A bad -gate-mode is refused as the flags are parsed, naming the flag;
// a duet that cannot run is refused by Normalize, before anything runs.
func TestGateModeRefusals(t *testing.T) {
	fs := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	suite.RegisterFlags(fs)
	err := fs.Parse([]string{"-gate-mode", "trio"})
	assert.EqualError(t, err, `invalid value "trio" for flag -gate-mode: want sequential, duet or open-duet`)

	_, err = normalize(t, "-gate-mode", "duet")
	assert.EqualError(t, err, "-gate-mode=duet: needs -candidate: a duet runs the reference and the candidate at the same time, in this run")
	_, err = normalize(t, "-gate-mode", "duet", "-store-reference")
	assert.EqualError(t, err, "-gate-mode=duet: not with -reference or -store-reference: a stored run cannot run at the same time as this one")
	cfg, err := normalize(t, "-target", "kind", "-candidate", "+no-keepalive", "-gate-mode", "duet")
	require.NoError(t, err, "a duet runs on kind when asked")
	assert.Equal(t, testbed.Duet, cfg.GateMode)
	assert.NotZero(t, cfg.GateSeed)
	cfg, err = normalize(t, "-target", "kind", "-candidate", "+no-keepalive", "-gate-mode", "open-duet")
	require.NoError(t, err, "open-duet runs on kind when asked")
	assert.Equal(t, testbed.OpenDuet, cfg.GateMode)
	assert.NotZero(t, cfg.GateSeed, "its open-loop duets draw their orders too")
	_, err = normalize(t, "-gate-mode", "open-duet", "-reference", "x.json")
	assert.ErrorContains(t, err, "-gate-mode=open-duet: not with -reference or -store-reference")

	fs = flag.NewFlagSet("meshbench", flag.ContinueOnError)
	cfg = suite.RegisterFlags(fs)
	cfg.GateMode = "trio"
	assert.EqualError(t, cfg.Normalize(), "-gate-mode=trio: want sequential, duet or open-duet", "a Config set by hand is checked too")
}

// -gate-fresh is on by default in a local gate with a candidate, off
// elsewhere; given, it is the local target's gate only, refused elsewhere
// before anything runs; the settings record it.
func TestGateFreshFlag(t *testing.T) {
	cfg, err := normalize(t, "-candidate", "caddy")
	require.NoError(t, err)
	assert.True(t, cfg.GateFresh, "the default of a local gate")
	cfg, err = normalize(t, "-candidate", "caddy", "-gate-fresh=false")
	require.NoError(t, err)
	assert.False(t, cfg.GateFresh, "turned off")
	cfg, err = normalize(t)
	require.NoError(t, err)
	assert.False(t, cfg.GateFresh, "no gate, nothing to start afresh")
	cfg, err = normalize(t, "-target", "kind", "-candidate", "+no-keepalive")
	require.NoError(t, err)
	assert.False(t, cfg.GateFresh, "off on a cluster")

	_, err = normalize(t, "-gate-fresh")
	assert.EqualError(t, err, "-gate-fresh: needs -candidate: it starts the reference's and the candidate's processes afresh in a gate's rounds")
	_, err = normalize(t, "-target", "kind", "-candidate", "+no-keepalive", "-gate-fresh")
	assert.EqualError(t, err, "-gate-fresh: the local target only (-target=kind): a cluster's pods are not redeployed between rounds")
	fs := flag.NewFlagSet("meshbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	suite.RegisterFlags(fs)
	assert.EqualError(t, fs.Parse([]string{"-gate-fresh=maybe"}), `invalid boolean value "maybe" for -gate-fresh: want true or false`)
}
