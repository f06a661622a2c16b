package main

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A collection delete that the API server ends part-way is asked again; one that keeps failing
// ends the phase with the error.
func TestDeletePodsAsksAgain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing int // collection deletes that fail before one succeeds
		wantErr bool
	}{
		{name: "first attempt"},
		{name: "after two failures", failing: 2},
		{name: "every attempt fails", failing: deleteAttempts, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fitNamespace, Name: "p", Labels: map[string]string{fitSchedulerBy: "tailor"}}}
			client := fake.NewClientset(pod)
			calls := 0
			client.PrependReactor("delete-collection", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= tc.failing {
					return true, nil, errors.New("stream error: INTERNAL_ERROR")
				}
				// The fake's tracker has no collection delete of its own.
				return true, nil, client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), fitNamespace, pod.Name)
			})
			err := (&fitPhase{client: client}).deletePods(context.Background(), "tailor")
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if want := min(tc.failing+1, deleteAttempts); calls != want {
				t.Errorf("%d collection deletes, want %d", calls, want)
			}
			left, _ := client.CoreV1().Pods(fitNamespace).List(context.Background(), metav1.ListOptions{})
			if !tc.wantErr && len(left.Items) != 0 {
				t.Errorf("%d pods left", len(left.Items))
			}
		})
	}
}
