package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
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
		slices.Contains(edit.SettingFields(), name) || isOpenAIField(name)
}

// maxFieldBytes bounds every text field but the prompt: model, n, response_format and
// the settings are short.
const maxFieldBytes = 1024

// readForm streams the multipart body (never spilling to disk), rejecting unknown
// fields, repeated fields, over-long text fields and a second image as they arrive.
// r.Body must already be bounded by http.MaxBytesReader; hitting the bound is a 413.
// dropUnknown (the accept-unknown fault only) drops an unknown field instead.
func readForm(r *http.Request, maxPrompt int, dropUnknown bool) (editForm, *apiError) {
	f := editForm{fields: map[string]string{}}
	mr, err := r.MultipartReader()
	if err != nil {
		return f, badRequest("", fmt.Sprintf("want a multipart/form-data body: %v", err))
	}
	for parts := 0; ; parts++ {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) && parts == 0 {
			_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			return f, badRequest("", fmt.Sprintf("malformed multipart body: no part delimited by the boundary %s that Content-Type declares "+
				"(a body built for another boundary, or not multipart at all)", quoteBounded(params["boundary"])))
		}
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil && parts == 0 && errors.Is(err, bufio.ErrBufferFull) {
			// The reader looked for the first boundary in a whole buffer of body and found
			// none: the same fault as an empty body without it, said the same way.
			_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			return f, badRequest("", fmt.Sprintf("malformed multipart body: no part delimited by the boundary %s that Content-Type declares "+
				"(a body built for another boundary, or not multipart at all)", quoteBounded(params["boundary"])))
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
			limit, flag := maxFieldBytes, ""
			if name == fieldPrompt {
				limit, flag = maxPrompt, " (--max-prompt-bytes)"
			}
			// One byte past the limit is enough to know it is over: the rest is never held.
			data, err := io.ReadAll(io.LimitReader(part, int64(limit)+1))
			if err != nil {
				return f, bodyError(err, name)
			}
			if len(data) > limit {
				return f, &apiError{status: http.StatusRequestEntityTooLarge, param: name,
					message: fmt.Sprintf("field %q is over the limit of %d bytes%s", name, limit, flag)}
			}
			f.fields[name] = string(data)
		case refusedField(name) != "":
			return f, badRequest(name, refusedField(name))
		case dropUnknown:
			if _, err := io.Copy(io.Discard, part); err != nil {
				return f, bodyError(err, name)
			}
		default:
			clipped := prefix(name, maxQuoted)
			return f, badRequest(clipped, fmt.Sprintf("unknown field %s", quoteBounded(name)))
		}
	}
}

// bodyError is 413 when the body ran past its bound, 408 when it did not arrive in
// time, else 400.
func bodyError(err error, param string) *apiError {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &apiError{status: http.StatusRequestEntityTooLarge, param: param,
			message: fmt.Sprintf("request body over the limit of %d bytes", tooBig.Limit)}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return &apiError{status: http.StatusRequestTimeout, param: param,
			message: "the request body did not arrive within the server's body timeout (--body-timeout)"}
	}
	return badRequest(param, fmt.Sprintf("read multipart body: %v", err))
}
