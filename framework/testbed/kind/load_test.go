package kind

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	kindexec "sigs.k8s.io/kind/pkg/exec"
)

// imageNode is a node whose containerd holds the images of ids (name to
// ID); it answers `crictl inspecti NAME` as crictl does, or fails as
// crictl does for an image it does not have.
type imageNode struct {
	nodes.Node
	name string
	ids  map[string]string
}

func (n imageNode) String() string { return n.name }

func (n imageNode) Command(cmd string, args ...string) kindexec.Cmd {
	return &inspectCmd{node: n, argv: append([]string{cmd}, args...)}
}

func (n imageNode) CommandContext(_ context.Context, cmd string, args ...string) kindexec.Cmd {
	return n.Command(cmd, args...)
}

type inspectCmd struct {
	node imageNode
	argv []string
	out  io.Writer
}

func (c *inspectCmd) Run() error {
	if len(c.argv) != 3 || c.argv[0] != "crictl" || c.argv[1] != "inspecti" {
		return fmt.Errorf("unexpected command %q", c.argv)
	}
	id, ok := c.node.ids[c.argv[2]]
	if !ok {
		return &kindexec.RunError{Command: c.argv, Output: []byte("no such image"), Inner: fmt.Errorf("exit status 1")}
	}
	_, err := fmt.Fprintf(c.out, `{"status": {"id": %q, "repoTags": [%q]}}`, id, c.argv[2])
	return err
}

func (c *inspectCmd) SetEnv(...string) kindexec.Cmd      { return c }
func (c *inspectCmd) SetStdin(io.Reader) kindexec.Cmd    { return c }
func (c *inspectCmd) SetStdout(w io.Writer) kindexec.Cmd { c.out = w; return c }
func (c *inspectCmd) SetStderr(io.Writer) kindexec.Cmd   { return c }

func TestNodesLacking(t *testing.T) {
	images := []string{"meshbench/nginx:1.26", "meshbench/mbloadgen:dev"}
	ids := []string{"sha256:aaa", "sha256:bbb"}
	both := map[string]string{images[0]: ids[0], images[1]: ids[1]}
	cp := imageNode{name: "cp", ids: both}
	w1 := imageNode{name: "w1", ids: map[string]string{images[0]: ids[0]}}                          // one image missing
	w2 := imageNode{name: "w2", ids: map[string]string{images[0]: ids[0], images[1]: "sha256:old"}} // an older build
	w3 := imageNode{name: "w3", ids: both}

	got := nodesLacking([]nodes.Node{cp, w1, w2, w3}, images, ids)
	names := make([]string, len(got))
	for i, n := range got {
		names[i] = n.String()
	}
	assert.Equal(t, []string{"w1", "w2"}, names)
	assert.Empty(t, nodesLacking([]nodes.Node{cp, w3}, images, ids), "every node has both images with the local IDs")
	assert.Len(t, nodesLacking([]nodes.Node{cp}, images, []string{"sha256:aaa", "sha256:new"}), 1, "a rebuilt image is loaded again")
}
