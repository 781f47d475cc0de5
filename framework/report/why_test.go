package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meshbench/meshbench/framework/cpuprofile"
	"github.com/meshbench/meshbench/framework/report"
)

// The HTML report shows where the CPU went, under the verdict: the
// profiled round's sentence and both differential tables, row by row; or
// why no profile was taken. A run without it shows no such section.
func TestHTMLSaysWhereTheCPUWent(t *testing.T) {
	ins := openRecorded(t)
	var b bytes.Buffer
	require.NoError(t, report.HTML(&b, ins, report.Options{}))
	assert.False(t, strings.Contains(b.String(), "Where the CPU went"))

	pt := cpuprofile.Point{Scenario: "benchmark=UpgradeGate/c=8", Metric: "sidecar CPU per 1k requests", Seconds: 3,
		Reference: cpuprofile.Arm{Spec: "caddy", File: "r.reference.p.pprof", Sidecars: 2, Samples: 300, Requests: 6000},
		Candidate: cpuprofile.Arm{Spec: "caddy+access-log", File: "r.candidate.p.pprof", Sidecars: 2, Samples: 350, Requests: 5600},
		Flat:      []cpuprofile.Row{{Function: "go.uber.org/zap/zapcore.(*jsonEncoder).AppendString", Reference: 0, Candidate: 0.031, Difference: 0.031}},
		Cumulative: []cpuprofile.Row{{Function: "github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).logRequest", Reference: 0.001, Candidate: 0.152,
			Difference: 0.151}},
	}
	ins[0].Results.Why = &cpuprofile.Report{Points: []cpuprofile.Point{pt}}
	b.Reset()
	require.NoError(t, report.HTML(&b, ins, report.Options{}))
	html := b.String()
	has := func(want string) {
		t.Helper()
		assert.True(t, strings.Contains(html, want), "the report lacks %s", want)
	}
	has(`<h2 id="why-0">Where the CPU went</h2>`)
	has("<p>benchmark=UpgradeGate/c=8 failed on sidecar CPU per 1k requests. One extra round there, after the decision and not scored, profiled each arm&#39;s sidecars over its 3 s window: " +
		"reference caddy, 2 sidecars, 300 samples, 6000 requests (r.reference.p.pprof); candidate caddy&#43;access-log, 2 sidecars, 350 samples, 5600 requests (r.candidate.p.pprof). " +
		"Shares are of the reference&#39;s sidecar CPU per request: code both run alike keeps its share, and the candidate&#39;s shares sum to its CPU per request over the reference&#39;s. " +
		"Differences are in percentage points.</p>")
	has(`<tr><td class="l"><code>go.uber.org/zap/zapcore.(*jsonEncoder).AppendString</code></td><td>0.0 %</td><td>3.1 %</td><td>&#43;3.1 pp</td></tr>`)
	has(`<tr><td class="l"><code>github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).logRequest</code></td><td>0.1 %</td><td>15.2 %</td><td>&#43;15.1 pp</td></tr>`)

	ins[0].Results.Why = &cpuprofile.Report{None: "no CPU profile: nginx is not a Go program with a pprof endpoint"}
	b.Reset()
	require.NoError(t, report.HTML(&b, ins, report.Options{}))
	html = b.String()
	has("<p>no CPU profile: nginx is not a Go program with a pprof endpoint.</p>")
}
