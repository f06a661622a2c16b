package ec2sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// jsonHandler answers one AWS JSON 1.1 operation with a value to marshal as the response body.
// It runs without s.mu held.
type jsonHandler func(s *Sim, body []byte, params map[string]any) (any, *apiError)

// jsonHandlers are the JSON operations by X-Amz-Target.
var jsonHandlers = map[string]jsonHandler{
	"AmazonSSM.GetParameter":          (*Sim).getParameter,
	"AWSPriceListService.GetProducts": (*Sim).getProducts,
}

// serveJSON answers AWS JSON protocol requests: SSM GetParameter and Pricing GetProducts (JSON
// 1.1), and the SQS operations (JSON 1.0).
func (s *Sim) serveJSON(w http.ResponseWriter, r *http.Request, target string, begin time.Time) {
	op := target
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		op = target[i+1:]
	}
	sqs := strings.HasPrefix(target, "AmazonSQS.")
	contentType := "application/x-amz-json-1.1"
	writeErr := func(e *apiError) { s.writeJSONError(w, op, e, begin) }
	if sqs {
		contentType = "application/x-amz-json-1.0"
		writeErr = func(e *apiError) { s.writeSQSError(w, op, e, begin) }
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeErr(&apiError{status: 400, code: "SerializationException", message: err.Error()})
		return
	}
	var params map[string]any
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&params); err != nil {
			writeErr(&apiError{status: 400, code: "SerializationException", message: err.Error()})
			return
		}
	}
	rec := url.Values{}
	flattenJSON("", params, rec)

	fault := s.record(op, rec)
	if fault != nil && !fault.AfterEffect && fault.delayAndFail(r, writeErr) {
		return
	}
	var resp any
	var aerr *apiError
	if h, ok := jsonHandlers[target]; ok {
		resp, aerr = h(s, body, params)
	} else if h, ok := sqsHandlers[target]; ok {
		resp, aerr = h(s, r, params)
	} else {
		writeErr(&apiError{status: 400, code: "UnknownOperationException", message: fmt.Sprintf("ec2sim does not simulate %s", target)})
		return
	}
	if fault != nil && fault.AfterEffect && fault.delayAndFail(r, writeErr) {
		return
	}
	if aerr != nil {
		writeErr(aerr)
		return
	}
	s.mu.Lock()
	switch target {
	case "AmazonSSM.GetParameter":
		name, _ := params["Name"].(string)
		s.authorizeAs(principalOf(r), "ssm:GetParameter", []AuthorizedResource{{Type: "parameter", ID: name, Tags: map[string]string{}}}, nil)
	case "AWSPriceListService.GetProducts":
		s.authorizeAs(principalOf(r), "pricing:GetProducts", nil, nil)
	case "AmazonSQS.GetQueueUrl", "AmazonSQS.ReceiveMessage", "AmazonSQS.DeleteMessage", "AmazonSQS.SendMessage", "AmazonSQS.CreateQueue":
		name, _ := params["QueueName"].(string)
		if u, ok := params["QueueUrl"].(string); ok {
			name = u[strings.LastIndexByte(u, '/')+1:]
		}
		s.authorizeAs(principalOf(r), "sqs:"+op, []AuthorizedResource{{Type: "queue", ID: name, Tags: map[string]string{}}}, nil)
	}
	s.mu.Unlock()
	out, err := json.Marshal(resp)
	if err != nil {
		writeErr(&apiError{status: 500, code: "InternalFailure", message: err.Error()})
		return
	}
	s.mu.Lock()
	reqID := s.newRequestID()
	s.mu.Unlock()
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
	s.log.Debug("ec2sim request", "action", op, "status", 200, "duration", time.Since(begin))
}

// flattenJSON records a decoded JSON value under Query-protocol-like names: object members as
// Prefix.Member, list items as Prefix.N (from 1), scalars as their text.
func flattenJSON(prefix string, v any, out url.Values) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			flattenJSON(join(k), x, out)
		}
	case []any:
		for i, x := range v {
			flattenJSON(join(strconv.Itoa(i+1)), x, out)
		}
	case string:
		out.Set(prefix, v)
	case bool:
		out.Set(prefix, strconv.FormatBool(v))
	case json.Number:
		out.Set(prefix, v.String())
	}
}

// getParameter is SSM's GetParameter for the image alias parameters.
func (s *Sim) getParameter(_ []byte, params map[string]any) (any, *apiError) {
	name, _ := params["Name"].(string)
	if name == "" {
		return nil, &apiError{status: 400, code: "ValidationException", message: "1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null"}
	}
	s.mu.Lock()
	value, ok := s.resolveParameter(name)
	s.mu.Unlock()
	if !ok {
		return nil, &apiError{status: 400, code: "ParameterNotFound", message: fmt.Sprintf("Parameter %s not found.", name)}
	}
	arn := fmt.Sprintf("arn:aws:ssm:%s::parameter%s", s.opts.Region, name)
	return map[string]any{"Parameter": map[string]any{
		"ARN":              arn,
		"DataType":         "aws:ec2:image",
		"LastModifiedDate": float64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()),
		"Name":             name,
		"Type":             "String",
		"Value":            value,
		"Version":          1,
	}}, nil
}

// writeJSONError writes an awsJson1.1 error: the code is in the body's __type
// and in X-Amzn-ErrorType.
func (s *Sim) writeJSONError(w http.ResponseWriter, op string, e *apiError, begin time.Time) {
	s.writeErrorBody(w, op, e, begin, "application/x-amz-json-1.1", map[string]string{"__type": e.code, "message": e.message})
}

// writeSQSError writes an awsJson1.0 SQS error: the shape's qualified name in __type and the
// query-protocol code in X-Amzn-Query-Error, which the SDK reports as the error code (SQS is
// query-compatible).
func (s *Sim) writeSQSError(w http.ResponseWriter, op string, e *apiError, begin time.Time) {
	if e.queryCode != "" {
		fault := "Sender"
		if e.status >= 500 {
			fault = "Receiver"
		}
		w.Header().Set("X-Amzn-Query-Error", e.queryCode+";"+fault)
	}
	s.writeErrorBody(w, op, e, begin, "application/x-amz-json-1.0", map[string]string{"__type": "com.amazonaws.sqs#" + e.code, "message": e.message})
}

// writeErrorBody writes a JSON error body with the headers both JSON
// protocols share.
func (s *Sim) writeErrorBody(w http.ResponseWriter, op string, e *apiError, begin time.Time, contentType string, body map[string]string) {
	s.mu.Lock()
	reqID := s.newRequestID()
	s.mu.Unlock()
	out, _ := json.Marshal(body)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.Header().Set("X-Amzn-ErrorType", e.code)
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(e.status)
	_, _ = w.Write(out)
	s.log.Debug("ec2sim request", "action", op, "status", e.status, "code", e.code, "duration", time.Since(begin))
}
