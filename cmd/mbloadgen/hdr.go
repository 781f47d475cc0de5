package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/fortio/rapi"

	"github.com/meshbench/meshbench/framework/load"
)

// HDRField is the field mbloadgen adds to fortio's run result: the run's
// load.Latencies, every request's latency in HDR histograms (one per
// fortio thread, merged), each in HDR's compact encoding, with the
// coordinated-omission-corrected one for open-loop runs:
//
//	"MeshbenchHDR": {"uncorrected": "HISTFAAA…", "corrected": "HISTFAAA…"}
//
// A run asked with hdr=off records none and has no such field.
const HDRField = "MeshbenchHDR"

// runs serialises the runs of the process and hands each one its
// load.Recorder through fortio's REST hook, which is process-wide like
// the rest of fortio's REST state.
var runs = &runSlot{}

type runSlot struct {
	// running is held for a whole run.
	running sync.Mutex
	mu      sync.Mutex
	// armed says the next run records HDR; rec is its Recorder once
	// fortio has built the run's options.
	armed bool
	rec   *load.Recorder
}

// hook is rapi's hook, called with a run's options before the run.
func (s *runSlot) hook(_ *fhttp.HTTPOptions, ro *periodic.RunnerOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed || s.rec != nil {
		return
	}
	s.rec = load.NewRecorder(ro)
	ro.AccessLogger = s.rec
}

// arm prepares the next run; take returns its Recorder, if any, and
// disarms.
func (s *runSlot) arm(hdr bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.rec = hdr, nil
}

func (s *runSlot) take() *load.Recorder {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.rec
	s.armed, s.rec = false, nil
	return rec
}

// runHandler runs one load through fortio's REST handler, synchronously
// and one at a time, and adds HDRField to its answer.
func runHandler(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("async") == "on" {
		replyError(w, http.StatusBadRequest, "mbloadgen runs synchronously only: drop async=on")
		return
	}
	if !runs.running.TryLock() {
		replyError(w, http.StatusConflict, "a run is already in progress on this loadgen")
		return
	}
	defer runs.running.Unlock()
	runs.arm(r.URL.Query().Get("hdr") != "off")
	buf := &bufferedResponse{header: http.Header{}, code: http.StatusOK}
	rapi.RESTRunHandler(buf, r)
	body := buf.body.Bytes()
	if rec := runs.take(); rec != nil && buf.code == http.StatusOK {
		var err error
		if body, err = withHDR(body, rec); err != nil {
			replyError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	for k, v := range buf.header {
		w.Header()[k] = v
	}
	w.WriteHeader(buf.code)
	_, _ = w.Write(body)
}

// withHDR adds the recorder's Latencies to fortio's JSON result, unless
// the result is an error.
func withHDR(body []byte, rec *load.Recorder) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decode fortio's result: %w", err)
	}
	var reply struct {
		Error     bool
		StartTime time.Time
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, fmt.Errorf("decode fortio's result: %w", err)
	}
	if reply.Error {
		return body, nil
	}
	lat, err := rec.Latencies(reply.StartTime)
	if err != nil {
		return nil, fmt.Errorf("HDR latencies: %w", err)
	}
	if doc[HDRField], err = json.Marshal(lat); err != nil {
		return nil, fmt.Errorf("encode HDR latencies: %w", err)
	}
	return json.MarshalIndent(doc, "", "  ")
}

// bufferedResponse holds fortio's answer until HDRField is added.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(code int)        { b.code = code }
