package harness

// A fake family and a fake AIPerf, so the pipeline's code runs end to end in unit tests
// without Python, Docker or a model: every program is this test binary, started again
// with QUALKIT_FAKE naming the program it plays (the helper-process pattern). The fakes
// are for the harness's own tests only; qual/ runs the real AIPerf and real families.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"qualkit/internal/family"
	"qualkit/internal/judge"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if prog := os.Getenv("QUALKIT_FAKE"); prog != "" {
		os.Exit(fakeMain(prog, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeMain plays one program of the fake family, or the fake AIPerf.
func fakeMain(prog string, args []string) int {
	var err error
	switch prog {
	case "build":
		err = fakeBuild(args)
	case "correctness":
		err = fakeCorrectness(args)
	case "serve":
		err = fakeServe(args)
	case "native":
		err = fakeNative(args)
	case "native-batch":
		err = fakeNativeBatch(args)
	case "gpuread":
		reading := fakeGPUs
		if n := os.Getenv("QUALKIT_FAKE_GPUS"); n != "" {
			reading = fakeGPUReading(n)
		}
		_, err = os.Stdout.WriteString(reading)
	case "aiperf":
		err = fakeAIPerf(args)
	default:
		err = fmt.Errorf("unknown fake program %q", prog)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake %s: %v\n", prog, err)
		return 1
	}
	return 0
}

// fakeFault names a fault the fake family plays (FakeFamily.Fault).
const (
	faultBuild        = "build"         // the build exits 1
	faultOtherCase    = "other-case"    // the correctness JUnit names another test
	faultCaseFails    = "case-fails"    // the case's result.json says fail
	faultNeverReady   = "never-ready"   // /health/ready answers 503
	faultConstant     = "constant"      // every output is one grey
	faultDrift        = "drift"         // the native Task is one level off in one pixel
	faultIgnoreRef    = "ignore-ref"    // the output does not depend on the input image
	faultRecordsLie   = "records-lie"   // the records file says another Task time than the body
	faultNativeSilent = "native-silent" // the native Task does not state what it wrote
	faultSlowCase     = "slow-case"     // the correctness case takes a second (no fault: time for the server to load beside it)
	faultGatedBuild   = "gated-build"   // the build writes <out>.started, then waits for <out>.release (gatedChecks opens it)
)

// fakeCaseID is the JUnit id of the fake correctness case.
const fakeCaseID = "fake.correctness.test_fake"

// FakeFamily is the test family: an "edit" that inverts the image (after scaling it to
// the requested size), its server, its native Task and its correctness case, all played
// by this test binary.
type FakeFamily struct {
	Fault    string
	Settings map[string]string      // build settings (part of the cache key)
	Img      *family.ContainerImage // runs in this image when set (Spec.Image)
}

// fakeCheckpoint is the one checkpoint the fake serves (its /v1/models says so).
const fakeCheckpoint = "fake/invert"

var _ family.Family = FakeFamily{}

func (f FakeFamily) Describe(family.Env, family.Row) (family.Spec, error) {
	spec := family.Spec{
		Backend:             "fake",
		Timing:              schema.TimingSource{Body: "timing.task_ms", Records: "timing.task_ms", RecordID: "request_id"},
		NativeOutputPattern: `"output_sha256":\s*"([0-9a-f]{64})"`,
		Build:               f.Build,
		Identity: family.IdentityCheck{Path: "/v1/models", Check: func(body []byte, _ family.ServeSpec) (string, error) {
			var doc struct {
				Data []struct{ ID, Checkpoint string } `json:"data"`
			}
			if err := json.Unmarshal(body, &doc); err != nil || len(doc.Data) != 1 {
				return "", fmt.Errorf("want one model in %s (%v)", body, err)
			}
			return doc.Data[0].Checkpoint, nil
		}},
	}
	if f.Img != nil {
		spec.Image = func(family.Env) (family.ContainerImage, error) { return *f.Img, nil }
	}
	return spec, nil
}

func (f FakeFamily) Tools(family.Env) (family.Tools, error) {
	settings := f.Settings
	if settings == nil {
		settings = map[string]string{"edit": "invert"}
	}
	return family.Tools{Builder: os.Args[0], Settings: settings}, nil
}

func (f FakeFamily) Build(_ family.Env, spec family.BuildSpec) (family.Command, error) {
	return f.with(f.program("build"), "-o", spec.Out, "-reference", spec.Reference), nil
}

func (f FakeFamily) Correctness(env family.Env, spec family.CorrectnessSpec) (family.CorrectnessCase, error) {
	return family.CorrectnessCase{
		Command: f.with(f.program("correctness"), "-bundle", spec.Bundle, "-junit", spec.JUnit, "-artifacts", spec.Artifacts),
		JUnit:   spec.JUnit, Cases: []string{fakeCaseID}, Result: filepath.Join(spec.Artifacts, "result.json"),
	}, nil
}

func (f FakeFamily) Serve(_ family.Env, spec family.ServeSpec) (family.Command, error) {
	return f.with(f.program("serve"), "-bundle", spec.Bundle, "-port", strconv.Itoa(spec.Port), "-records", spec.Records), nil
}

func (f FakeFamily) Native(_ family.Env, spec family.NativeSpec) (family.Command, error) {
	return f.with(f.program("native"), "-bundle", spec.Bundle, "-image", spec.Image, "-output", spec.Output, "-size", spec.Settings["size"]), nil
}

func (f FakeFamily) program(prog string) family.Command {
	// The race detector sleeps a second before a race binary exits, unless told not to.
	return family.Command{Args: []string{os.Args[0]}, Env: []string{"QUALKIT_FAKE=" + prog, "QUALKIT_FAKE_FAULT=" + f.Fault, "GORACE=atexit_sleep_ms=0"}}
}

func (f FakeFamily) with(c family.Command, args ...string) family.Command {
	c.Args = append(c.Args, args...)
	return c
}

// FakeServing is the fake family with the optional contracts: probes, a tools check, a
// bundle the correctness case builds, an identity route and file-URL outputs. Each
// field's value says how it behaves ("ok", or the fault).
type FakeServing struct {
	FakeFamily
	Probe   string // "ok", "fail", or "cuda": fail unless the probes see NVML's CUDA driver version (13000)
	ToolsOK string // "ok" or "fail"
	ByCase  bool   // the correctness case builds the bundle
	Ident   string // "ok" or "other": the server says it is another backend
	Task    bool   // the server speaks the TRTMC task protocol: PNGs under its scratch folder
	// BundleDir is Spec.BundleDir: where the bundles go instead of .cache/bundles.
	BundleDir string
}

func (f FakeServing) Describe(env family.Env, row family.Row) (family.Spec, error) {
	spec, err := f.FakeFamily.Describe(env, row)
	if f.ByCase {
		spec.Build = nil
	}
	spec.BundleDir = f.BundleDir
	if f.Task {
		spec.Wire = wire.Task{}
	}
	spec.Probes = func(env family.Env) []family.Probe {
		return []family.Probe{{Name: "version", What: "the fake's version", Cmd: f.with(f.program("aiperf"), "--version"),
			Check: func(out []byte, err error) error {
				if f.Probe == "cuda" {
					if env.CUDADriverVersion != 13000 {
						return fmt.Errorf("the probes see CUDA driver version %d, not NVML's 13000", env.CUDADriverVersion)
					}
					return err
				}
				if f.Probe != "ok" {
					return fmt.Errorf("the probe found a fault on purpose (output %q)", strings.TrimSpace(string(out)))
				}
				return err
			}, Fix: "nothing: a test fault"}}
	}
	spec.CheckTools = func(family.Env) error {
		if f.ToolsOK != "ok" {
			return fmt.Errorf("the tools lack a library on purpose")
		}
		return nil
	}
	spec.Identity = family.IdentityCheck{Path: "/v1/serving/info", Check: func(body []byte, ss family.ServeSpec) (string, error) {
		var info struct{ Backend, Bundle, Checkpoint string }
		if err := json.Unmarshal(body, &info); err != nil {
			return "", err
		}
		if info.Backend != "fake" || info.Bundle != ss.Bundle {
			return "", fmt.Errorf("the server says backend %q bundle %q, want fake on %s", info.Backend, info.Bundle, ss.Bundle)
		}
		return info.Checkpoint, nil
	}}
	return spec, err
}

func (f FakeServing) Correctness(env family.Env, spec family.CorrectnessSpec) (family.CorrectnessCase, error) {
	cc, err := f.FakeFamily.Correctness(env, spec)
	if f.ByCase {
		out := filepath.Join(spec.Scratch, "case-0", "invert.bundle")
		cc.Command = f.with(f.program("correctness"), "-junit", spec.JUnit, "-artifacts", spec.Artifacts, "-build", out)
		cc.Bundle = filepath.Join(spec.Scratch, "case-*", "invert.bundle")
	}
	return cc, err
}

func (f FakeServing) Serve(env family.Env, spec family.ServeSpec) (family.Command, error) {
	c, err := f.FakeFamily.Serve(env, spec)
	c.Env = append(c.Env, "QUALKIT_FAKE_IDENTITY="+f.Ident)
	if f.Task {
		c.Args = append(c.Args, "-scratch", spec.Scratch)
	}
	return c, err
}

func fakeBuild(args []string) error {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	out := fs.String("o", "", "")
	fs.String("reference", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch os.Getenv("QUALKIT_FAKE_FAULT") {
	case faultBuild:
		return fmt.Errorf("the build broke on purpose")
	case faultGatedBuild:
		if err := os.WriteFile(*out+".started", nil, 0o644); err != nil {
			return err
		}
		for {
			if _, err := os.Stat(*out + ".release"); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	fmt.Println("fake build: writing", *out)
	return os.WriteFile(*out, []byte("fake bundle: invert\n"), 0o644)
}

func fakeCorrectness(args []string) error {
	fs := flag.NewFlagSet("correctness", flag.ContinueOnError)
	bundle, junit, artifacts := fs.String("bundle", "", ""), fs.String("junit", "", ""), fs.String("artifacts", "", "")
	build := fs.String("build", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *build != "" {
		if err := os.MkdirAll(filepath.Dir(*build), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*build, []byte("fake bundle built by the case\n"), 0o644); err != nil {
			return err
		}
	} else if _, err := os.ReadFile(*bundle); err != nil {
		return err
	}
	if os.Getenv("QUALKIT_FAKE_FAULT") == faultSlowCase {
		time.Sleep(time.Second)
	}
	name := "test_fake"
	if os.Getenv("QUALKIT_FAKE_FAULT") == faultOtherCase {
		name = "test_something_else"
	}
	status := "pass"
	if os.Getenv("QUALKIT_FAKE_FAULT") == faultCaseFails {
		status = "fail"
	}
	xml := fmt.Sprintf(`<testsuites><testsuite tests="1"><testcase classname="fake.correctness" name="%s" time="0.1"/></testsuite></testsuites>`, name)
	if err := os.WriteFile(*junit, []byte(xml), 0o644); err != nil {
		return err
	}
	if pair := os.Getenv("QUALKIT_FAKE_PAIR"); pair != "" {
		// The case also edits the quality pair, and keeps its reference image.
		in, err := os.ReadFile(pair)
		if err != nil {
			return err
		}
		ref, err := fakeEdit(in, 16, 12, "")
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(*artifacts, "reference"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*artifacts, "reference", "a-invert.png"), ref, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(*artifacts, "result.json"), []byte(`{"status": "`+status+`"}`), 0o644)
}

// fakeEdit scales the image to w x h (nearest) and inverts it; it ignores the input
// with faultIgnoreRef and gives one grey with faultConstant.
func fakeEdit(in []byte, w, h int, fault string) ([]byte, error) {
	src, _, err := image.Decode(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			r, g, bl, _ := src.At(b.Min.X+x*b.Dx()/w, b.Min.Y+y*b.Dy()/h).RGBA()
			c := color.NRGBA{255 - uint8(r>>8), 255 - uint8(g>>8), 255 - uint8(bl>>8), 255}
			switch fault {
			case faultIgnoreRef:
				c = color.NRGBA{uint8(x * 7), uint8(y * 5), 99, 255}
			case faultConstant:
				c = color.NRGBA{128, 128, 128, 255}
			}
			out.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	err = png.Encode(&buf, out)
	return buf.Bytes(), err
}

func fakeSize(s string) (int, int, error) {
	var w, h int
	if _, err := fmt.Sscanf(s, "%dx%d", &w, &h); err != nil {
		return 0, 0, fmt.Errorf("size %q: %w", s, err)
	}
	return w, h, nil
}

func fakeServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	port, records := fs.Int("port", 0, ""), fs.String("records", "", "")
	bundle, scratch := fs.String("bundle", "", ""), fs.String("scratch", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fault := os.Getenv("QUALKIT_FAKE_FAULT")
	rec, err := os.OpenFile(*records, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer rec.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/health/ready", func(w http.ResponseWriter, _ *http.Request) {
		if fault == faultNeverReady {
			w.WriteHeader(503)
			return
		}
		fmt.Fprintln(w, `{"status":"ready"}`)
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		data := []map[string]string{}
		if fault != faultNeverReady {
			data = append(data, map[string]string{"id": "fake/invert", "checkpoint": fakeCheckpoint})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	})
	mux.HandleFunc("/v1/serving/info", func(w http.ResponseWriter, _ *http.Request) {
		backend := "fake"
		if os.Getenv("QUALKIT_FAKE_IDENTITY") == "other" {
			backend = "other"
		}
		json.NewEncoder(w).Encode(map[string]string{"backend": backend, "bundle": *bundle, "checkpoint": fakeCheckpoint})
	})
	edit := func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		var in []byte
		var size string
		if *scratch != "" { // the task protocol
			body, _ := io.ReadAll(r.Body)
			req, err := wire.Task{}.Decode(body)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			in, size = req.Image, req.Settings["size"]
		} else {
			if err := r.ParseMultipartForm(32 << 20); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			f, _, err := r.FormFile("image")
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			in, _ = io.ReadAll(f)
			size = r.FormValue("size")
		}
		wd, ht, err := fakeSize(size)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		start := time.Now()
		out, err := fakeEdit(in, wd, ht, fault)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		task := float64(time.Since(start).Microseconds()) / 1000
		recTask := task
		if fault == faultRecordsLie {
			recTask = task + 7
		}
		line, _ := json.Marshal(map[string]any{"request_id": id, "status": 200, "timing": map[string]float64{"task_ms": recTask}})
		rec.Write(append(line, '\n'))
		w.Header().Set("Content-Type", "application/json")
		if *scratch != "" {
			file := filepath.Join(*scratch, id, "output.image.1.0.png")
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			if err := os.WriteFile(file, out, 0o644); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "task.result", "timing": map[string]float64{"task_ms": task},
				"trtmc_observation": map[string]any{"image_artifacts": []string{filepath.Base(file)}}})
			return
		}
		item := map[string]string{"b64_json": base64.StdEncoding.EncodeToString(out)}
		json.NewEncoder(w).Encode(map[string]any{"created": 1, "data": []map[string]string{item}, "timing": map[string]float64{"task_ms": task}})
	}
	mux.HandleFunc("/v1/images/edits", edit)
	mux.HandleFunc("/v1/tasks/generate_image", edit)
	fmt.Println("fake serve: listening on", *port)
	srv := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", *port), Handler: mux}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() { <-stop; fmt.Println("fake serve: stopping"); srv.Close() }()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func fakeNative(args []string) error {
	fs := flag.NewFlagSet("native", flag.ContinueOnError)
	in, out, size := fs.String("image", "", ""), fs.String("output", "", ""), fs.String("size", "", "")
	fs.String("bundle", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	w, h, err := fakeSize(*size)
	if err != nil {
		return err
	}
	fault := os.Getenv("QUALKIT_FAKE_FAULT")
	png, err := fakeEdit(data, w, h, fault)
	if err != nil {
		return err
	}
	if fault == faultDrift {
		img, _ := judge.DecodePNG(png)
		n := judge.ToNRGBA(img)
		n.Pix[0]++
		var buf bytes.Buffer
		pngEncode(&buf, n)
		png = buf.Bytes()
	}
	if err := os.WriteFile(*out, png, 0o644); err != nil {
		return err
	}
	if fault != faultNativeSilent {
		sum := sha256.Sum256(png)
		fmt.Printf(`{"output": %q, "output_sha256": %q, "gpus": %q}`+"\n", *out, hex.EncodeToString(sum[:]), os.Getenv("CUDA_VISIBLE_DEVICES"))
	}
	return nil
}

func pngEncode(w io.Writer, img image.Image) { png.Encode(w, img) }

// fakeWaitForModel plays AIPerf's readiness probe in mode models: GET /v1/models until
// it lists the model, or the timeout (seconds) passes.
func fakeWaitForModel(url, model, timeout string) error {
	secs, err := strconv.Atoi(timeout)
	if err != nil {
		return fmt.Errorf("--wait-for-model-timeout %q: %w", timeout, err)
	}
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url + "/v1/models"); err == nil {
			var list struct{ Data []struct{ ID string } }
			json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			for _, m := range list.Data {
				if m.ID == model {
					return nil
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("model %s not listed at %s/v1/models within %s s", model, url, timeout)
}

// fakeAIPerf plays `aiperf --version` and `aiperf profile` for image_edit: it sends each
// input line (warmup first) as AIPerf's multipart request, sequentially, and writes the
// raw and per-request exports and a summary in AIPerf 0.13.0's shape (the fields the
// harness and the checker read). Like AIPerf 0.13.0, it leaves a folder in the temp
// folder (aiperf_mmap_<id>).
func fakeAIPerf(args []string) error {
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println("0.13.0")
		return nil
	}
	if len(args) == 0 || args[0] != "profile" {
		return fmt.Errorf("want profile, got %v", args)
	}
	opt := map[string][]string{}
	for i := 1; i < len(args); i++ {
		if strings.HasPrefix(args[i], "--") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			opt[args[i]] = append(opt[args[i]], args[i+1])
			i++
		}
	}
	one := func(k string) string {
		if v := opt[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	measured, _ := strconv.Atoi(one("--request-count"))
	warmup, _ := strconv.Atoi(one("--warmup-request-count"))
	settings := map[string]any{}
	for _, e := range opt["--extra-inputs"] {
		if err := json.Unmarshal([]byte(e), &settings); err != nil {
			return fmt.Errorf("--extra-inputs %q: %w", e, err)
		}
	}
	if t := one("--wait-for-model-timeout"); t != "" {
		if err := fakeWaitForModel(one("--url"), one("--model"), t); err != nil {
			return err
		}
	}
	mmap, err := os.MkdirTemp("", "aiperf_mmap_")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(mmap, "dataset.dat"), []byte("x"), 0o644); err != nil {
		return err
	}
	raw, err := os.ReadFile(one("--input-file"))
	if err != nil {
		return err
	}
	task := one("--endpoint-type") == "raw"
	var inputs []map[string]json.RawMessage
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var in map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			return err
		}
		inputs = append(inputs, in)
	}
	dir := one("--artifact-dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var rawOut, profOut bytes.Buffer
	var lat []float64
	for i := range warmup + measured {
		phase := "profiling"
		if i < warmup {
			phase = "warmup"
		}
		in := inputs[i%len(inputs)]
		id := fmt.Sprintf("fake-request-%02d", i)
		var payload any
		var status int
		var body []byte
		start := time.Now()
		if task { // AIPerf's raw endpoint: the line's payload is the body
			payload = in["payload"]
			status, body, err = postJSON(one("--url")+one("--custom-endpoint"), in["payload"], id)
		} else {
			var text, url string
			json.Unmarshal(in["text"], &text)
			json.Unmarshal(in["image"], &url)
			img, derr := base64.StdEncoding.DecodeString(strings.SplitN(url, ",", 2)[1])
			if derr != nil {
				return derr
			}
			str := map[string]string{}
			for k, v := range settings {
				str[k] = fmt.Sprint(v)
			}
			status, body, err = Send(context.Background(), &http.Client{Timeout: time.Minute}, wire.OpenAI{}, one("--url"), one("--model"), wire.Request{Image: img, Prompt: text, Settings: str}, id)
			fields := map[string]any{"prompt": text, "model": one("--model"), "response_format": "b64_json", "n": 1,
				"image": map[string]string{"b64_data": base64.StdEncoding.EncodeToString(img), "filename": "image.png", "content_type": "image/png"}}
			for k, v := range settings {
				fields[k] = v
			}
			payload = fields
		}
		end := time.Now()
		if err != nil {
			return err
		}
		meta := map[string]any{"x_request_id": id, "conversation_id": fmt.Sprintf("session_%06d", i), "benchmark_phase": phase,
			"request_start_ns": start.UnixNano(), "request_end_ns": end.UnixNano()}
		rec := map[string]any{"metadata": meta, "status": status, "payload": payload,
			"request_headers": map[string]string{"User-Agent": "aiperf/0.13.0"}, "responses": []map[string]string{{"text": string(body)}}}
		if status != 200 {
			rec["error"] = map[string]any{"code": status, "type": "HTTP", "message": string(body)}
		}
		line, _ := json.Marshal(rec)
		rawOut.Write(append(line, '\n'))
		ms := float64(end.UnixNano()-start.UnixNano()) / 1e6
		pline, _ := json.Marshal(map[string]any{"metadata": meta, "metrics": map[string]any{"request_latency": map[string]any{"value": ms, "unit": "ms"}}})
		profOut.Write(append(pline, '\n'))
		if phase == "profiling" {
			lat = append(lat, ms)
		}
	}
	summary, _ := json.Marshal(map[string]any{"aiperf_version": "0.13.0", "request_latency": map[string]any{"unit": "ms", "count": len(lat)}})
	for name, data := range map[string][]byte{"profile_export_raw.jsonl": rawOut.Bytes(), "profile_export.jsonl": profOut.Bytes(), "profile_export_aiperf.json": summary} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// postJSON posts body as JSON with X-Request-ID, as AIPerf's raw endpoint does.
func postJSON(url string, body []byte, id string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-ID", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
