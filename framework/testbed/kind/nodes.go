package kind

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"
)

// NodeExec runs commands on the nodes of kind cluster name (docker
// exec into the node containers, through kind's node API): a fault kills
// its container through the node, as a crash would. It returns each
// command's combined output.
func NodeExec(name string) func(ctx context.Context, node string, cmd ...string) ([]byte, error) {
	return func(ctx context.Context, node string, cmd ...string) ([]byte, error) {
		ns, err := kindcluster.NewProvider().ListNodes(name)
		if err != nil {
			return nil, fmt.Errorf("kind %s: list nodes: %w", name, err)
		}
		for _, n := range ns {
			if n.String() != node {
				continue
			}
			var out bytes.Buffer
			c := n.CommandContext(ctx, cmd[0], cmd[1:]...)
			c.SetStdout(&out)
			c.SetStderr(&out)
			if err := c.Run(); err != nil {
				return out.Bytes(), fmt.Errorf("kind %s: on node %s: %w", name, node, err)
			}
			return out.Bytes(), nil
		}
		return nil, fmt.Errorf("kind %s: no node %s", name, node)
	}
}

// LocalImages lists the images present in the local Docker, to be loaded
// into kind's nodes (docker image inspect finds them).
func LocalImages(ctx context.Context, images ...string) []string {
	var out []string
	for _, img := range images {
		if img != "" && exec.CommandContext(ctx, "docker", "image", "inspect", img).Run() == nil {
			out = append(out, img)
		}
	}
	return out
}
