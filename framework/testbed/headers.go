package testbed

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/framework/workload"
)

// proofHeaders are the headers the path proof reads: a client that sent
// one would forge the proof (workload.SourceHeader is the caller's claim,
// PeerHeader and ProtoHeader are the inbound sidecar's).
var proofHeaders = []string{workload.SourceHeader, workload.PeerHeader, workload.ProtoHeader}

// normalizeHeaders replaces w.Headers with a copy (def's when w has none),
// so that a target never writes into the scenario's map, and refuses a
// name that is not an HTTP token, a path-proof header, a name given twice
// in two cases, or a value with a control character.
func (w *Workload) normalizeHeaders(def map[string]string) []error {
	if len(w.Headers) == 0 {
		w.Headers = def
	}
	w.Headers = maps.Clone(w.Headers)
	var errs []error
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(w.Headers)) {
		canon := http.CanonicalHeaderKey(name)
		first, dup := seen[canon]
		seen[canon] = name
		switch {
		case dup:
			errs = append(errs, fmt.Errorf("headers: %s and %s are one header (names are case-insensitive)", first, name))
		case !isToken(name):
			errs = append(errs, fmt.Errorf("headers: %q is not a header name (an HTTP token: letters, digits and !#$%%&'*+-.^_`|~)", name))
		case slices.Contains(proofHeaders, canon):
			errs = append(errs, fmt.Errorf("headers: %s is the path proof's own header (%s); a client that sent it would forge the proof",
				name, strings.Join(proofHeaders, ", ")))
		case strings.ContainsFunc(w.Headers[name], isCTL):
			errs = append(errs, fmt.Errorf("headers: %s: value %q has a control character", name, w.Headers[name]))
		}
	}
	return errs
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2),
// what a header name must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)
		if !ok {
			return false
		}
	}
	return true
}

// isCTL reports whether r is a control character a header value must not
// hold: anything below space but a tab, and DEL.
func isCTL(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }
