package meshinstall

import (
	"fmt"

	"github.com/meshbench/meshbench/framework/mesh"
)

// RevisionCharts are the charts that add revision cm beside an installed
// one: its istiod, without the cluster-wide base chart. dir, when set, is
// where they are read from (mesh.Chart.Dir): a revision of another version
// than the installed one's brings its own charts.
func RevisionCharts(cm mesh.Mesh, o mesh.InstallOptions, dir string) ([]mesh.Chart, error) {
	inst, ok := cm.(mesh.Installer)
	if !ok {
		return nil, fmt.Errorf("the %s adapter cannot install it", cm.Name())
	}
	charts, err := inst.Charts(o)
	if err != nil {
		return nil, err
	}
	var out []mesh.Chart
	for _, ch := range charts {
		if ch.Name != "base" {
			ch.Dir = dir
			out = append(out, ch)
		}
	}
	return out, nil
}
