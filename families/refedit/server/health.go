package server

import "net/http"

func (s *Server) handleLive(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
}

// handleReady is 503 until Load, then names the bundle it serves.
func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	p := s.program.Load()
	if p == nil || s.faults.unready() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "model": s.cfg.ModelName, "bundle_sha256": p.SHA256()})
}

type modelList struct {
	Object string  `json:"object"`
	Data   []model `json:"data"`
}

type model struct {
	ID           string `json:"id"`
	Object       string `json:"object"`
	Created      int64  `json:"created"`
	OwnedBy      string `json:"owned_by"`
	Backend      string `json:"backend"`
	Checkpoint   string `json:"checkpoint"` // the bundle's: what is really served, whatever the --model-name
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
}

// handleModels lists the one model; created is when its bundle was loaded.
func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	// The model is listed once it can be served (as /health/ready answers 200), never
	// before: a client that waits for it here sends no request to a loading server.
	data := []model{}
	if p := s.program.Load(); p != nil && !s.faults.unready() {
		data = append(data, model{ID: s.cfg.ModelName, Object: "model", Created: s.loadedAt.Load(), OwnedBy: "qualkit", Backend: Backend, Checkpoint: p.Bundle().Checkpoint, BundleSHA256: p.SHA256()})
	}
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: data})
}
