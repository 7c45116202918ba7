package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"qualkit/internal/schema"
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
	var md hfMetadata
	err := schema.ReadJSON(filepath.Join(root, metadataPath), &md)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", metadataPath, err)
	}
	revs := make(map[string]string, len(md.Checkpoints))
	for _, c := range md.Checkpoints {
		if c.HFID != "" {
			revs[c.HFID] = c.Revision
		}
	}
	return revs, nil
}
