package ec2sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// serveJSON answers AWS JSON protocol requests; only SSM's GetParameter is simulated.
func (s *Sim) serveJSON(w http.ResponseWriter, r *http.Request, target string, begin time.Time) {
	service, op, _ := strings.Cut(target, ".")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.writeJSONError(w, op, &apiError{status: 400, code: "SerializationException", message: err.Error()}, begin)
		return
	}
	var params map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &params); err != nil {
			s.writeJSONError(w, op, &apiError{status: 400, code: "SerializationException", message: err.Error()}, begin)
			return
		}
	}
	rec := url.Values{}
	for k, v := range params {
		switch v := v.(type) {
		case string:
			rec.Set(k, v)
		case bool:
			rec.Set(k, strconv.FormatBool(v))
		}
	}

	s.mu.Lock()
	s.calls[op]++
	reqs := s.requests[op]
	if len(reqs) >= maxRecorded {
		reqs = slices.Delete(reqs, 0, 1)
	}
	s.requests[op] = append(reqs, rec)
	fault := s.takeFault(op)
	s.mu.Unlock()
	if fault != nil {
		if !sleep(r, fault.Latency) {
			return
		}
		if fault.Code != "" {
			s.writeJSONError(w, op, &apiError{status: fault.HTTPStatus, code: fault.Code, message: fault.Message}, begin)
			return
		}
	}
	if service != "AmazonSSM" || op != "GetParameter" {
		s.writeJSONError(w, op, &apiError{status: 400, code: "UnknownOperationException", message: fmt.Sprintf("ec2sim does not simulate %s", target)}, begin)
		return
	}
	name, _ := params["Name"].(string)
	if name == "" {
		s.writeJSONError(w, op, &apiError{status: 400, code: "ValidationException", message: "1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null"}, begin)
		return
	}
	s.mu.Lock()
	value, ok := s.resolveParameter(name)
	s.mu.Unlock()
	if !ok {
		s.writeJSONError(w, op, &apiError{status: 400, code: "ParameterNotFound", message: fmt.Sprintf("Parameter %s not found.", name)}, begin)
		return
	}
	arn := fmt.Sprintf("arn:aws:ssm:%s::parameter%s", s.opts.Region, name)
	resp := map[string]any{"Parameter": map[string]any{
		"ARN":              arn,
		"DataType":         "aws:ec2:image",
		"LastModifiedDate": float64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()),
		"Name":             name,
		"Type":             "String",
		"Value":            value,
		"Version":          1,
	}}
	out, _ := json.Marshal(resp)
	s.mu.Lock()
	reqID := s.newRequestID()
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	s.log.Debug("ec2sim request", "action", op, "status", 200, "duration", time.Since(begin))
}

func (s *Sim) writeJSONError(w http.ResponseWriter, op string, e *apiError, begin time.Time) {
	s.mu.Lock()
	reqID := s.newRequestID()
	s.mu.Unlock()
	out, _ := json.Marshal(map[string]string{"__type": e.code, "message": e.message})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.Header().Set("X-Amzn-ErrorType", e.code)
	w.WriteHeader(e.status)
	_, _ = w.Write(out)
	s.log.Debug("ec2sim request", "action", op, "status", e.status, "code", e.code, "duration", time.Since(begin))
}
