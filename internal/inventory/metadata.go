package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// hfMetadata is website/data/hf-model-metadata.json: pinned Hugging Face revisions.
type hfMetadata struct {
	Checkpoints []struct {
		HFID     string `json:"hf_id"`
		Revision string `json:"revision"`
	} `json:"checkpoints"`
}

// readRevisions maps hf_id to its pinned revision. A checkout without the file has no
// revisions (every profile then reads ""); a file that is there but unreadable is an error.
func readRevisions(root string) (map[string]string, error) {
	path := filepath.Join(root, metadataPath)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", metadataPath, err)
	}
	var md hfMetadata
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, fmt.Errorf("parse %s: %w", metadataPath, err)
	}
	revs := make(map[string]string, len(md.Checkpoints))
	for _, c := range md.Checkpoints {
		if c.HFID != "" {
			revs[c.HFID] = c.Revision
		}
	}
	return revs, nil
}
