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
	assert.Equal(t, "missed target rate; errors: 3 of 1000 requests failed; loadgen shard 2 (b): missed target rate", rs.String())
	assert.Equal(t, "missed target rate", fmt.Sprint(rs[0]))
}

func ExampleReasons() {
	var rs validity.Reasons
	rs.Add(validity.Errors, "errors: %d of %d requests failed", 3, 1000)
	fmt.Println(rs.Kinds(), rs)
	// Output: [errors] errors: 3 of 1000 requests failed
}
