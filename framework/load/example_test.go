package load_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/meshbench/meshbench/framework/load"
)

// A one-second open-loop run at 200 req/s over 2 connections, after a
// thrown-away warm-up, against a server on port 0.
func ExampleRun() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	res, err := load.Run(context.Background(), load.Options{
		URL: srv.URL + "/", Concurrency: 2, QPS: 200, Duration: time.Second, Warmup: 200 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("valid:", res.Valid(), "errors:", res.Errors, "codes:", len(res.Codes))
	fmt.Println("histogram holds every request:", res.Latency.Count == res.Requests)
	// Output:
	// valid: true errors: 0 codes: 1
	// histogram holds every request: true
}
