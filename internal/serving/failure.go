package serving

import "qualkit/internal/schema"

// Failure is an error whose kind the serving layer knows first-hand (it read it from
// the engine, not from a log): the container was OOM-killed, the Docker engine went away,
// the server was stopped from outside the run. The harness classifies it by type
// (errors.As), never by its words, so a reworded message keeps its kind.
type Failure struct {
	Kind string // schema.KindHardware or schema.KindInfrastructure
	What string // the short reason the evidence records
	Err  error  // the whole error, with what was seen
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

func oomKilled(err error) error {
	return &Failure{Kind: schema.KindHardware, What: "the container was OOM-killed", Err: err}
}

func engineGone(err error) error {
	return &Failure{Kind: schema.KindInfrastructure, What: "the Docker engine is gone", Err: err}
}

func stoppedFromOutside(err error) error {
	return &Failure{Kind: schema.KindInfrastructure, What: "the server was stopped from outside the run", Err: err}
}
