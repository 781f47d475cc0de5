// Package testcharts finds, for tests, the Helm charts this tree pins in
// the Go module cache: Istio's (the 1.31 pin in hack/offline/versions.env,
// which the Makefile's ISTIO_CHARTS downloads) and any module's directory.
// Tests never download; without the module a test is skipped, saying how
// to get it.
package testcharts

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// IstioModule is the Go module that holds Istio's charts.
const IstioModule = "istio.io/istio"

// versionsEnv is hack/offline/versions.env of this tree, found from this
// source file so that a test in any package reads the same one.
func versionsEnv() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "hack", "offline", "versions.env")
}

// IstioVersion is the ISTIO_VERSION_131 pin of hack/offline/versions.env.
// A missing file or key fails the test: the pin is part of this tree.
func IstioVersion(t testing.TB) string {
	t.Helper()
	return IstioPin(t, "131")
}

// IstioPin is the ISTIO_VERSION_<n> pin of hack/offline/versions.env (n
// is 130 or 131, as hack/offline/istio.sh takes it).
func IstioPin(t testing.TB, n string) string {
	t.Helper()
	env := versionsEnv()
	data, err := os.ReadFile(env)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^ISTIO_VERSION_` + regexp.QuoteMeta(n) + `=(\S+)$`).FindSubmatch(data)
	require.NotNil(t, m, "%s sets no ISTIO_VERSION_%s", env, n)
	return string(m[1])
}

// IstioChartsOf returns the charts of the ISTIO_VERSION_<n> pin in the Go
// module cache; without the module the test is skipped.
func IstioChartsOf(t testing.TB, n string) string {
	t.Helper()
	v := IstioPin(t, n)
	dir := filepath.Join(ModCache(t), IstioModule+"@"+v, "manifests", "charts")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("Istio's charts are not in the module cache (go mod download %s@%s): %v", IstioModule, v, err)
	}
	return dir
}

// ModCache is the Go module cache: $GOMODCACHE, or go env GOMODCACHE.
func ModCache(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("GOMODCACHE"); d != "" {
		return d
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err, "go env GOMODCACHE")
	return strings.TrimSpace(string(out))
}

// IstioDir returns Istio's Helm charts: $MESHBENCH_ISTIO_CHARTS, or
// <module>/manifests/charts of the pinned version when that module is in
// the module cache. Without either the test is skipped.
func IstioDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("MESHBENCH_ISTIO_CHARTS"); d != "" {
		return d
	}
	v := IstioVersion(t)
	dir := filepath.Join(ModCache(t), IstioModule+"@"+v, "manifests", "charts")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("Istio's charts are not in the module cache (make chart-modules, or go mod download %s@%s, or set MESHBENCH_ISTIO_CHARTS): %v", IstioModule, v, err)
	}
	return dir
}
