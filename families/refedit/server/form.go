package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"qualkit/families/refedit/edit"
)

// Form field names beyond the edit settings.
const (
	fieldPrompt         = "prompt"
	fieldModel          = "model"
	fieldResponseFormat = "response_format"
	fieldN              = "n"
)

// isImageField says whether a part is the one image file part.
func isImageField(name string) bool { return name == "image" || name == "image[]" }

// editForm is the multipart body of an edit request.
type editForm struct {
	fields map[string]string // the text fields, by name
	image  []byte            // nil when no image part came
}

func isTextField(name string) bool {
	return slices.Contains([]string{fieldPrompt, fieldModel, fieldResponseFormat, fieldN}, name) ||
		slices.Contains(edit.SettingFields(), name)
}

// readForm streams the multipart body (never spilling to disk), rejecting unknown
// fields, repeated fields and a second image as they arrive. r.Body must already be
// bounded by http.MaxBytesReader; hitting the bound is a 413.
func readForm(r *http.Request) (editForm, *apiError) {
	f := editForm{fields: map[string]string{}}
	mr, err := r.MultipartReader()
	if err != nil {
		return f, badRequest("", fmt.Sprintf("want a multipart/form-data body: %v", err))
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return f, bodyError(err, "")
		}
		name := part.FormName()
		switch {
		case isImageField(name):
			if f.image != nil {
				return f, badRequest(name, "exactly one image file part (image or image[]) is allowed, got more")
			}
			data, err := io.ReadAll(part)
			if err != nil {
				return f, bodyError(err, name)
			}
			f.image = data
			if f.image == nil {
				f.image = []byte{}
			}
		case isTextField(name):
			if _, dup := f.fields[name]; dup {
				return f, badRequest(name, fmt.Sprintf("field %q given more than once", name))
			}
			data, err := io.ReadAll(part)
			if err != nil {
				return f, bodyError(err, name)
			}
			f.fields[name] = string(data)
		default:
			return f, badRequest(name, fmt.Sprintf("unknown field %q", name))
		}
	}
}

// bodyError is 413 when the body ran past its bound, else 400.
func bodyError(err error, param string) *apiError {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &apiError{status: http.StatusRequestEntityTooLarge, param: param,
			message: fmt.Sprintf("request body over the limit of %d bytes", tooBig.Limit)}
	}
	return badRequest(param, fmt.Sprintf("read multipart body: %v", err))
}
