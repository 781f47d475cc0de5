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

// TimelineField is the field mbloadgen adds to fortio's run result when
// the run is asked with timeline=<bucket> (a Go duration, e.g. 50ms): the
// run's load.Timeline, successes and failures per bucket by completion
// time, on the loadgen's clock, from which a fault's recovery is judged.
const TimelineField = "MeshbenchTimeline"

// runs serialises the runs of the process and hands each one its
// recorders through fortio's REST hook, which is process-wide like the
// rest of fortio's REST state.
var runs = &runSlot{}

type runSlot struct {
	// running is held for a whole run.
	running sync.Mutex
	mu      sync.Mutex
	// armed says the next run records; hdr and bucket what. rec and tl are
	// its recorders once fortio has built the run's options.
	armed  bool
	hdr    bool
	bucket time.Duration
	rec    *load.Recorder
	tl     *load.TimelineRecorder
}

// hook is rapi's hook, called with a run's options before the run.
func (s *runSlot) hook(ho *fhttp.HTTPOptions, ro *periodic.RunnerOptions) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed || s.rec != nil || s.tl != nil {
		return
	}
	s.rec, s.tl = newRecorders(ro, s.hdr, s.bucket, ho.HTTPReqTimeOut)
}

// newRecorders sets ro's access logger to the recorders a run asks for:
// HDR latencies (hdr) and a timeline in buckets of width bucket (when > 0)
// over the run's duration plus one request's timeout and a second.
func newRecorders(ro *periodic.RunnerOptions, hdr bool, bucket, timeout time.Duration) (*load.Recorder, *load.TimelineRecorder) {
	var ls []periodic.AccessLogger
	var rec *load.Recorder
	var tl *load.TimelineRecorder
	if hdr {
		rec = load.NewRecorder(ro)
		ls = append(ls, rec)
	}
	if bucket > 0 {
		span := ro.Duration + timeout + time.Second
		tl = load.NewTimelineRecorder(time.Now(), bucket, span, ro.NumThreads)
		ls = append(ls, tl)
	}
	if len(ls) > 0 {
		ro.AccessLogger = load.Loggers(ls...)
	}
	return rec, tl
}

// arm prepares the next run; take returns its recorders, if any, and
// disarms.
func (s *runSlot) arm(hdr bool, bucket time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed, s.hdr, s.bucket, s.rec, s.tl = hdr || bucket > 0, hdr, bucket, nil, nil
}

func (s *runSlot) take() (*load.Recorder, *load.TimelineRecorder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, tl := s.rec, s.tl
	s.armed, s.rec, s.tl = false, nil, nil
	return rec, tl
}

// runHandler runs one load through fortio's REST handler, or, for an
// xds:/// or grpc:// url, through mbloadgen's gRPC ping runner
// (grpcRunHandler), synchronously and one at a time, and adds HDRField
// (and TimelineField when asked) to its answer.
func runHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("async") == "on" {
		replyError(w, http.StatusBadRequest, "mbloadgen runs synchronously only: drop async=on")
		return
	}
	var bucket time.Duration
	if v := q.Get("timeline"); v != "" {
		var err error
		if bucket, err = time.ParseDuration(v); err != nil || bucket <= 0 {
			replyError(w, http.StatusBadRequest, fmt.Sprintf("timeline=%q: want a positive Go duration such as 50ms", v))
			return
		}
	}
	if !runs.running.TryLock() {
		replyError(w, http.StatusConflict, "a run is already in progress on this loadgen")
		return
	}
	defer runs.running.Unlock()
	if isGRPCURL(q.Get("url")) {
		grpcRunHandler(w, r, q.Get("hdr") != "off", bucket)
		return
	}
	runs.arm(q.Get("hdr") != "off", bucket)
	buf := &bufferedResponse{header: http.Header{}, code: http.StatusOK}
	rapi.RESTRunHandler(buf, r)
	body := buf.body.Bytes()
	if rec, tl := runs.take(); (rec != nil || tl != nil) && buf.code == http.StatusOK {
		var err error
		if body, err = withRecords(body, rec, tl); err != nil {
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

// withRecords adds the recorder's Latencies and the timeline, each when
// recorded, to fortio's JSON result, unless the result is an error.
func withRecords(body []byte, rec *load.Recorder, tl *load.TimelineRecorder) ([]byte, error) {
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
	if rec != nil {
		lat, err := rec.Latencies(reply.StartTime)
		if err != nil {
			return nil, fmt.Errorf("HDR latencies: %w", err)
		}
		if doc[HDRField], err = json.Marshal(lat); err != nil {
			return nil, fmt.Errorf("encode HDR latencies: %w", err)
		}
	}
	if tl != nil {
		var err error
		if doc[TimelineField], err = json.Marshal(tl.Timeline()); err != nil {
			return nil, fmt.Errorf("encode the timeline: %w", err)
		}
	}
	return json.MarshalIndent(doc, "", "  ")
}

// bufferedResponse holds fortio's answer until HDRField is added.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

// Header is the buffered answer's header map (http.ResponseWriter).
func (b *bufferedResponse) Header() http.Header { return b.header }

// Write appends p to the buffered body (http.ResponseWriter).
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }

// WriteHeader records the status code; the real answer gets it once the
// records are added to the body (http.ResponseWriter).
func (b *bufferedResponse) WriteHeader(code int) { b.code = code }
