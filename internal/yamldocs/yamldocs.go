// Package yamldocs reads the recorded Kubernetes objects that tests judge
// without a cluster (pod statuses, events), kept as multi-document YAML.
package yamldocs

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// Docs decodes every document of the multi-document YAML file path
// ("---" between documents) into a T, strictly: an unknown field is an
// error naming the file and the document.
func Docs[T any](path string) ([]T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("yamldocs: %w", err)
	}
	var out []T
	for i, doc := range strings.Split(string(b), "\n---\n") {
		var v T
		if err := yaml.UnmarshalStrict([]byte(doc), &v); err != nil {
			return nil, fmt.Errorf("yamldocs: %s: document %d: %w", path, i+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}
