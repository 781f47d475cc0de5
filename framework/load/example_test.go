package load_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/meshbench/meshbench/framework/load"
)

// A half-second closed-loop run (maximum rate) over 2 connections, after a
// thrown-away warm-up, against a server on port 0.
func ExampleRun() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	res, err := load.Run(context.Background(), load.Options{
		URL: srv.URL + "/", Concurrency: 2, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
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
