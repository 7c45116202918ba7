package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Fault injection: refedit served (or run) deliberately broken, so that qualkit can
// prove each of its gates fails (families/refedit/README.md, "Fault injection"). A
// fault is only ever on when given explicitly (Config.Fault, `--fault`); the zero
// Fault is none, and a server with a fault logs it at start and names it in every
// response.

// The faults. Task faults change the edit's output, so `refedit run` accepts them
// too; the others are HTTP behaviour and exist only in the server.
const (
	FaultIgnoreReference  = "ignore-reference"
	FaultNondeterministic = "nondeterministic"
	FaultDrift            = "drift"
	FaultWrongSize        = "wrong-size"
	FaultJPEG             = "jpeg"
	FaultConstant         = "constant"
	FaultUnchanged        = "unchanged"
	FaultResizeOnly       = "resize-only"
	FaultOtherEdit        = "other-instruction"
	FaultRotate90         = "rotate90"
	FaultWeakReference    = "weak-reference"
	FaultStatus500        = "status-500"
	FaultErrorJSON        = "error-json"
	FaultSlow             = "slow"
	FaultCrash            = "crash"
	FaultNoTiming         = "no-timing"
	FaultIgnoreRequestID  = "ignore-request-id"
	FaultNeverReady       = "never-ready"
	FaultIgnoreSteps      = "ignore-steps"
	FaultPinSize          = "pin-size"
	FaultDropGuidance     = "drop-guidance"
	FaultAcceptUnknown    = "accept-unknown"
)

// PinnedSize is the size the pin-size fault always edits at: the workload's own, so
// only a request for another size shows the fault.
const PinnedSize = 512

// DefaultFaultDelay is how long the slow fault's request sleeps unless told otherwise.
const DefaultFaultDelay = 10 * time.Second

// FaultHeader names the fault on every response of a faulty server.
const FaultHeader = "X-Refedit-Fault"

type faultKind struct {
	name    string
	counted bool // hits only the K-th edit request (":K", default 1)
	task    bool
	what    string
}

var faultKinds = []faultKind{
	{FaultIgnoreReference, false, true, "edits a fixed synthetic image of the input's size instead of the input"},
	{FaultNondeterministic, false, true, "random bytes in the first pixels: the output differs call to call"},
	{FaultDrift, false, true, "pixel (0,0) one level off in red: the other path (HTTP or native) no longer matches"},
	{FaultWrongSize, false, true, "one column wider than the requested size"},
	{FaultJPEG, false, true, "a JPEG instead of a PNG"},
	{FaultConstant, false, true, "a constant grey image of the requested size"},
	{FaultUnchanged, false, true, "the input bytes as the output"},
	{FaultResizeOnly, false, true, "the input resized (nearest neighbour) to the requested size, not edited"},
	{FaultOtherEdit, false, true, "a plausible edit of the input, but another instruction's (the bundle's next edit)"},
	{FaultRotate90, false, true, "the right edit, turned 90 degrees (square sizes keep their size)"},
	{FaultWeakReference, false, true, "ignore-reference, but pixel (0,0) takes its red from the input's first byte of pixel data"},
	{FaultStatus500, true, false, "the K-th edit request answers 500"},
	{FaultErrorJSON, false, false, `every edit answers 200 with {"error": ...} and no image`},
	{FaultSlow, true, false, "the K-th edit request sleeps --fault-delay before it runs"},
	{FaultCrash, true, false, "the process exits (code 3) on the K-th edit request, before answering"},
	{FaultNoTiming, false, false, `no "timing" in the response body`},
	{FaultIgnoreRequestID, false, false, "X-Request-ID is not honoured: a fresh id in the header, the body and the records"},
	{FaultNeverReady, false, false, "/health/ready answers 503 for ever, as if the model never loaded"},
	{FaultIgnoreSteps, false, true, "runs the bundle's default num_inference_steps whatever the request asks, and records the steps asked"},
	{FaultPinSize, false, true, "edits at 512x512 whatever size the request asks, and records the size asked"},
	{FaultDropGuidance, false, true, "runs the bundle's default guidance_scale whatever the request asks, and records the guidance asked"},
	{FaultAcceptUnknown, false, false, "an unknown form field is dropped and the edit answers 200, instead of a 400 naming it"},
}

// Fault is one injected fault; the zero value is none.
type Fault struct {
	Name  string
	K     int           // status-500, slow, crash: the edit request they hit (1-based, counted once its body is read)
	Delay time.Duration // slow: how long that request sleeps
}

// FaultNames lists every fault, in the order the README documents them.
func FaultNames() []string {
	names := make([]string, len(faultKinds))
	for i, k := range faultKinds {
		names[i] = k.name
	}
	return names
}

func kindOf(name string) (faultKind, bool) {
	for _, k := range faultKinds {
		if k.name == name {
			return k, true
		}
	}
	return faultKind{}, false
}

// ParseFault reads NAME or NAME:K. The empty string is no fault.
func ParseFault(spec string) (Fault, error) {
	if spec == "" {
		return Fault{}, nil
	}
	name, ks, hasK := strings.Cut(spec, ":")
	kind, ok := kindOf(name)
	if !ok {
		return Fault{}, fmt.Errorf("unknown fault %q: want one of %s", name, strings.Join(FaultNames(), ", "))
	}
	f := Fault{Name: name}
	switch {
	case kind.counted && !hasK:
		f.K = 1
	case kind.counted:
		k, err := strconv.Atoi(ks)
		if err != nil || k < 1 {
			return Fault{}, fmt.Errorf("fault %q: K must be an edit request number >= 1, got %q", spec, ks)
		}
		f.K = k
	case hasK:
		return Fault{}, fmt.Errorf("fault %q: %s takes no :K (only %s do)", spec, name, strings.Join(countedNames(), ", "))
	}
	if name == FaultSlow {
		f.Delay = DefaultFaultDelay
	}
	return f, nil
}

func countedNames() []string {
	var names []string
	for _, k := range faultKinds {
		if k.counted {
			names = append(names, k.name)
		}
	}
	return names
}

// On says whether a fault is injected.
func (f Fault) On() bool { return f.Name != "" }

// Task says whether the fault changes the edit's output (and so applies to `refedit run`).
func (f Fault) Task() bool {
	k, _ := kindOf(f.Name)
	return k.task
}

// String is the spec: NAME, or NAME:K for the faults that hit one request.
func (f Fault) String() string {
	if f.K > 0 {
		return fmt.Sprintf("%s:%d", f.Name, f.K)
	}
	return f.Name
}

// Describe says what the fault does, for the loud line a faulty process logs at start.
func (f Fault) Describe() string {
	k, _ := kindOf(f.Name)
	if f.Name == FaultSlow {
		return strings.ReplaceAll(k.what, "--fault-delay", f.Delay.String())
	}
	return k.what
}

// Check rejects a Fault that ParseFault would not have made.
func (f Fault) Check() error {
	if !f.On() {
		return nil
	}
	k, ok := kindOf(f.Name)
	switch {
	case !ok:
		return fmt.Errorf("unknown fault %q: want one of %s", f.Name, strings.Join(FaultNames(), ", "))
	case k.counted && f.K < 1:
		return fmt.Errorf("fault %s: K must be >= 1", f.Name)
	case !k.counted && f.K != 0:
		return fmt.Errorf("fault %s takes no K", f.Name)
	case f.Name == FaultSlow && f.Delay <= 0:
		return fmt.Errorf("fault slow: delay must be > 0, got %s", f.Delay)
	case f.Name != FaultSlow && f.Delay != 0:
		return fmt.Errorf("fault %s: a delay applies only to %s", f.Name, FaultSlow)
	}
	return nil
}
