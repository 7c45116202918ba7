package evidencecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// What results.json version 2 and run.json add (issue 39), each re-derived from a raw source.

// checkResultV2 re-derives the p99s and the first request; version 1 never had them,
// but a value it states is checked all the same.
func (r *rowCheck) checkResultV2() {
	res := r.res
	v2 := res.Schema != schema.ResultSchemaV1
	client, task, problems := r.measuredTimes()
	if r.rawErr == nil && len(problems) == 0 {
		p99 := func(name string, got *schema.Quantiles, xs []float64, src string) {
			if got == nil || (!v2 && got.P99 == 0) {
				return
			}
			r.same(schema.ResultsFile, name+".p99_ms", fmtNum(nearestRank(xs, 99)), fmtNum(got.P99), schema.PercentileMethod+" over "+src)
		}
		p99("http_latency", res.HTTP, client, "request_latency of the profiling records in "+schema.ProfileExportFile)
		p99("task_time", res.Task, task, r.taskSrc)
	}
	first := r.firstSent()
	switch {
	case res.FirstRequest == nil && v2 && res.HTTP != nil && first != nil && first.client:
		r.fail(schema.ResultsFile, "first_request", "the first request AIPerf sent, "+first.id+" (schema "+res.Schema+" with timing columns)", "none")
	case res.FirstRequest == nil:
	case first == nil:
		r.fail(schema.ResultsFile, "first_request", "a request in a readable "+schema.RawExportFile, "request "+res.FirstRequest.RequestID)
	default:
		src := "the earliest request_start_ns in " + schema.RawExportFile
		got := res.FirstRequest
		r.same(schema.ResultsFile, "first_request.request_id", first.id, got.RequestID, src)
		r.same(schema.ResultsFile, "first_request.phase", first.phase, got.Phase, src)
		want := "no request_latency"
		if first.client {
			want = fmtNum(first.clientMs)
		}
		r.same(schema.ResultsFile, "first_request.client_latency_ms", want, fmtNum(got.ClientMs), "request_latency of "+first.id+" in "+schema.ProfileExportFile)
	}
}

// firstSent: nil without a raw export.
func (r *rowCheck) firstSent() *request {
	var first *request
	for _, q := range r.reqs {
		if first == nil || q.rec.Metadata.RequestStartNs < first.rec.Metadata.RequestStartNs {
			first = q
		}
	}
	return first
}

func (c *checker) checkHost() {
	info := c.info
	if info == nil {
		return
	}
	mem := ""
	if info.MemTotalBytes != 0 {
		mem = fmt.Sprint(info.MemTotalBytes)
	}
	for _, h := range []struct {
		file, claim, got string
		derive           func([]byte) string
	}{
		{schema.HostCPUInfoFile, "cpu_model", info.CPUModel, cpuModel},
		{schema.HostMemInfoFile, "mem_total_bytes", mem, memTotalBytes},
	} {
		b, ok := c.read(h.file)
		if !ok {
			c.truth(h.got == "", schema.RunFile, h.claim, "none without "+h.file+" (the host's /proc file, verbatim)", quote(h.got))
			continue
		}
		c.same(schema.RunFile, h.claim, h.derive(b), h.got, h.file)
	}
}

func cpuModel(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// memTotalBytes: "" when none.
func memTotalBytes(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			if f := strings.Fields(rest); len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return fmt.Sprint(kb * 1024)
				}
			}
		}
	}
	return ""
}
