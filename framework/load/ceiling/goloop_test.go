package ceiling

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExchange reads exactly one answer per request, its body by
// Content-Length, whatever the header's case, leaving the next answer.
func TestExchange(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	answers := []string{"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello", "HTTP/1.1 204 No Content\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"}
	go func() {
		defer server.Close()
		br := bufio.NewReader(server)
		for _, a := range answers {
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
			_, _ = br.ReadString('\n')
			_, _ = br.ReadString('\n')
			_, _ = server.Write([]byte(a))
		}
	}()
	req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(client)
	require.NoError(t, exchange(client, br, req))
	require.NoError(t, exchange(client, br, req), "the body of the first answer was read to its end")
	assert.EqualError(t, exchange(client, br, req), `content-length "x": strconv.Atoi: parsing "x": invalid syntax`)
}

// TestGoFloor: the bare loop keeps c connections busy against a real
// server and counts what it was answered.
func TestGoFloor(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served.Add(1)
		_, _ = w.Write(make([]byte, 128))
	}))
	defer srv.Close()
	r, err := GoFloor(context.Background(), srv.URL+"/", 4, 200*time.Millisecond)
	require.NoError(t, err)
	assert.Positive(t, r.QPS)
	assert.Positive(t, r.CPUPer1k)
	assert.InDelta(t, float64(served.Load()), r.QPS*0.2, float64(served.Load())/5+4, "about a window's worth of the requests served")

	srv.Close()
	_, err = GoFloor(context.Background(), srv.URL+"/", 1, 50*time.Millisecond)
	assert.ErrorContains(t, err, "go floor: dial tcp")
}
