package mesh

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// istioChartsDir returns Istio's Helm charts as its Go module holds them:
// $MESHBENCH_ISTIO_CHARTS, or <module>/manifests/charts of the version the
// Makefile's ISTIO_CHARTS names when that module is in the module cache.
// Without either the test is skipped, saying how to get them (the tests
// never download).
func istioChartsDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("MESHBENCH_ISTIO_CHARTS"); d != "" {
		return d
	}
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Skipf("no Makefile to name Istio's charts: %v", err)
	}
	m := regexp.MustCompile(`(?m)^ISTIO_CHARTS \?= (\S+)@(\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Skip("the Makefile names no ISTIO_CHARTS")
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			t.Skipf("go env GOMODCACHE: %v", err)
		}
		cache = strings.TrimSpace(string(out))
	}
	dir := filepath.Join(cache, string(m[1])+"@"+string(m[2]), "manifests", "charts")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("Istio's charts are not in the module cache (go mod download -json %s@%s, or set MESHBENCH_ISTIO_CHARTS): %v", m[1], m[2], err)
	}
	return dir
}
