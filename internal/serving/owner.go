package serving

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// Owner is the process that creates containers, images and processes, as their labels
// say. Session tells two processes apart; the rest lets a sweep on the same host and PID
// namespace ask whether the owner still runs.
type Owner struct {
	Session  string // random, made once per process
	Host     string
	PID      int
	PIDStart string // /proc/<pid>/stat field 22: a reused pid has another
	PIDNS    string // the PID namespace (/proc/self/ns/pid): a pid means nothing in another
}

// SessionEnv holds the session in every process Run and Start start (their children
// inherit it): the reaper finds them by it.
const SessionEnv = "QUALKIT_SESSION"

// Self is this process as an Owner, the same for its whole life.
var Self = sync.OnceValue(func() Owner {
	b := make([]byte, 8)
	rand.Read(b)
	host, _ := os.Hostname()
	o := Owner{Session: hex.EncodeToString(b), Host: host, PID: os.Getpid()}
	o.PIDStart, _ = processStart(o.PID)
	o.PIDNS, _ = os.Readlink("/proc/self/ns/pid")
	return o
})

// labels are the labels of what o creates for row of runID.
func (o Owner) labels(runID, row string) map[string]string {
	l := o.ownerLabels()
	l[LabelRun], l[LabelRow] = runID, row
	return l
}

// ownerLabels name o alone: its session's presence, and the filter of what is its.
func (o Owner) ownerLabels() map[string]string {
	l := map[string]string{LabelManaged: "true", LabelSession: o.Session, LabelHost: o.Host, LabelPID: strconv.Itoa(o.PID)}
	if o.PIDStart != "" {
		l[LabelPIDStart] = o.PIDStart
	}
	if o.PIDNS != "" {
		l[LabelPIDNS] = o.PIDNS
	}
	return l
}

// owns says whether labels name o: its session, or, on the build steps before the
// session's label, its host and pid with what they carry yet of its start and namespace.
func (o Owner) owns(labels map[string]string) bool {
	if s := labels[LabelSession]; s != "" {
		return s == o.Session
	}
	matches := func(key, v string) bool { l, ok := labels[key]; return !ok || l == v }
	return labels[LabelHost] == o.Host && labels[LabelPID] == strconv.Itoa(o.PID) &&
		matches(LabelPIDNS, o.PIDNS) && matches(LabelPIDStart, o.PIDStart)
}

// sessionEnv is the variable that marks a process as o's.
func (o Owner) sessionEnv() string { return SessionEnv + "=" + o.Session }

func (o Owner) String() string {
	return fmt.Sprintf("session %s (pid %d on %s)", o.Session, o.PID, o.Host)
}
