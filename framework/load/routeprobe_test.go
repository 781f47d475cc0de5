package load

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRouteProbeQuery: the query names the target and the wanted state,
// carries timeout and interval as Go durations the loadgen parses back,
// and leaves out those ≤ 0 for the loadgen's defaults.
func TestRouteProbeQuery(t *testing.T) {
	const target = "xds:///backend.a.svc.cluster.local:8079"
	q := RouteProbeQuery(target, RouteAbort, 45*time.Second, 2*time.Millisecond)
	assert.Equal(t, url.Values{
		"target": {target}, "want": {"abort"}, "timeout": {"45s"}, "interval": {"2ms"},
	}, q)
	back, err := url.ParseQuery(q.Encode())
	require.NoError(t, err)
	timeout, err := time.ParseDuration(back.Get("timeout"))
	require.NoError(t, err)
	assert.Equal(t, 45*time.Second, timeout)
	interval, err := time.ParseDuration(back.Get("interval"))
	require.NoError(t, err)
	assert.Equal(t, 2*time.Millisecond, interval)
	assert.Equal(t, target, back.Get("target"))

	assert.Equal(t, url.Values{"target": {"h:1"}, "want": {"ok"}}, RouteProbeQuery("h:1", RouteOK, 0, -time.Second))
	assert.Equal(t, "1.5ms", RouteProbeQuery("h:1", RouteOK, 0, 1500*time.Microsecond).Get("interval"))
}
