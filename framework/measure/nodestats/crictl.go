package nodestats

import (
	"encoding/json"
	"strconv"

	"github.com/meshbench/meshbench/framework/measure/kubelet"
)

// crictlStats is `crictl stats -o json`: the CRI ListContainerStats
// response, in protobuf's JSON (64-bit integers as strings).
type crictlStats struct {
	Stats []containerStats `json:"stats"`
}

type containerStats struct {
	Attributes struct {
		ID     string            `json:"id"`
		Labels map[string]string `json:"labels"`
	} `json:"attributes"`
	CPU *struct {
		Timestamp            uint64 `json:"timestamp,string"`
		UsageCoreNanoSeconds *value `json:"usageCoreNanoSeconds"`
	} `json:"cpu"`
	Memory *struct {
		Timestamp       uint64 `json:"timestamp,string"`
		WorkingSetBytes *value `json:"workingSetBytes"`
		// RSSBytes is the cgroup's anonymous memory (v1 total_rss, v2
		// anon), as containerd reports it.
		RSSBytes *value `json:"rssBytes"`
	} `json:"memory"`
}

// value is a CRI UInt64Value.
type value struct {
	Value uint64 `json:"value"`
}

// UnmarshalJSON takes the value as a string (protobuf's JSON) or a number.
func (v *value) UnmarshalJSON(b []byte) error {
	var raw struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	s := string(raw.Value)
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return err
	}
	v.Value = n
	return nil
}

// memory sets c's working set and RSS from the runtime's memory stats,
// those it has.
func (s containerStats) memory(c *kubelet.Container) {
	m := s.Memory
	if m == nil {
		return
	}
	at := nanos(int64(m.Timestamp))
	if m.WorkingSetBytes != nil {
		c.WorkingSetBytes = kubelet.Sample{Value: float64(m.WorkingSetBytes.Value), Time: at}
	}
	if m.RSSBytes != nil {
		c.RSSBytes = &kubelet.Sample{Value: float64(m.RSSBytes.Value), Time: at}
	}
}

// key names the container by the kubelet's labels on it.
func (s containerStats) key() kubelet.ContainerKey {
	l := s.Attributes.Labels
	return kubelet.ContainerKey{
		Namespace: l["io.kubernetes.pod.namespace"],
		Pod:       l["io.kubernetes.pod.name"],
		Container: l["io.kubernetes.container.name"],
	}
}
