package validity_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/validity"
)

func TestReasonsJSON(t *testing.T) {
	var rs validity.Reasons
	rs.Add(validity.MissedRate, "missed target rate: achieved %.1f req/s of %.1f", 940.0, 1000.0)
	rs.Add(validity.Restart, "restart during the window: %s", "backend")
	data, err := json.Marshal(rs)
	require.NoError(t, err)
	assert.Equal(t, `[{"kind":"missed-rate","detail":"missed target rate: achieved 940.0 req/s of 1000.0"},{"kind":"restart","detail":"restart during the window: backend"}]`, string(data))

	var back validity.Reasons
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, rs, back)
}

func TestReasonsJSONBeforeKinds(t *testing.T) {
	var rs validity.Reasons
	require.NoError(t, json.Unmarshal([]byte(`["no request completed","mTLS not verified: no proxy"]`), &rs))
	assert.Equal(t, validity.Reasons{
		{Kind: validity.Unknown, Detail: "no request completed"},
		{Kind: validity.Unknown, Detail: "mTLS not verified: no proxy"},
	}, rs)

	var bad validity.Reasons
	assert.EqualError(t, json.Unmarshal([]byte(`[7]`), &bad),
		`invalid reason: want a string or {"kind","detail"}: json: cannot unmarshal number into Go value of type validity.plain`)
}

func TestReasonsKinds(t *testing.T) {
	var none validity.Reasons
	assert.False(t, none.Only(validity.MissedRate), "a valid run is not invalid only by a missed rate")
	assert.Nil(t, none.Kinds())
	assert.Nil(t, none.Strings())

	rs := validity.Reasons{
		validity.New(validity.MissedRate, "missed target rate"),
		validity.New(validity.Errors, "errors: 3 of 1000 requests failed"),
		validity.New(validity.MissedRate, "loadgen shard 2 (b): missed target rate"),
	}
	assert.Equal(t, []validity.Kind{validity.MissedRate, validity.Errors}, rs.Kinds())
	assert.False(t, rs.Only(validity.MissedRate))
	assert.True(t, rs.Only(validity.MissedRate, validity.Errors))
	assert.Equal(t, validity.Reasons{rs[0], rs[2]}, rs.Of(validity.MissedRate))
	assert.True(t, rs.Has(validity.Errors))
	assert.False(t, rs.Has(validity.Restart))
	assert.False(t, none.Has(validity.Errors))
	assert.Equal(t, "missed target rate; errors: 3 of 1000 requests failed; loadgen shard 2 (b): missed target rate", rs.String())
	assert.Equal(t, "missed target rate", fmt.Sprint(rs[0]))
}

// TestWarningsJSON: warnings are Reasons of the warning kinds, stored
// and read back the same way, plain strings of old files included.
func TestWarningsJSON(t *testing.T) {
	var ws validity.Reasons
	ws.Add(validity.NodeSaturated, "node %s CPU at %.0f%% of %d cores: the machine, not only the mesh, is the ceiling", "local", 97.0, 2)
	ws.Add(validity.FaultNoFailures, "the fault failed no request")
	data, err := json.Marshal(ws)
	require.NoError(t, err)
	assert.Equal(t, `[{"kind":"node-saturated","detail":"node local CPU at 97% of 2 cores: the machine, not only the mesh, is the ceiling"},`+
		`{"kind":"fault-no-failures","detail":"the fault failed no request"}]`, string(data))
	var back validity.Reasons
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, ws, back)

	var old validity.Reasons
	require.NoError(t, json.Unmarshal([]byte(`["the fault failed no request"]`), &old))
	assert.Equal(t, validity.Reasons{{Kind: validity.Unknown, Detail: "the fault failed no request"}}, old)
	assert.False(t, old.Has(validity.FaultNoFailures))
}

func ExampleReasons() {
	var rs validity.Reasons
	rs.Add(validity.Errors, "errors: %d of %d requests failed", 3, 1000)
	fmt.Println(rs.Kinds(), rs)
	// Output: [errors] errors: 3 of 1000 requests failed
}

func ExampleReasons_warnings() {
	var ws validity.Reasons
	ws.Add(validity.CPUIncomplete, "CPU not measured: %s", "node: sample has no timestamp")
	fmt.Println(ws.Has(validity.CPUIncomplete), ws.Kinds(), ws)
	// Output: true [cpu-incomplete] CPU not measured: node: sample has no timestamp
}
