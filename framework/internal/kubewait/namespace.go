package kubewait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// DeleteNamespaces deletes nss and waits until they are gone; namespaces
// that stay are reported with the conditions that say why (what the
// namespace controller could not delete or discover). logf receives one line
// when the deletion starts and one when it is done.
func DeleteNamespaces(ctx context.Context, c kubernetes.Interface, nss []string, logf func(string, ...any)) []error {
	if len(nss) == 0 {
		return nil
	}
	var errs []error
	for _, ns := range nss {
		err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete namespace %s: %w", ns, err))
		}
	}
	logf("kube target: deleting namespaces %s", strings.Join(nss, ", "))
	start := time.Now()
	var left []string
	var why []string
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		left, why, lastErr = nil, nil, nil
		for _, ns := range nss {
			n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				left, lastErr = append(left, ns), err // transient, or the API server is gone: poll on
			default:
				left = append(left, ns)
				for _, c := range n.Status.Conditions {
					if c.Status == corev1.ConditionTrue {
						why = append(why, fmt.Sprintf("%s %s: %s", ns, c.Type, c.Message))
					}
				}
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		msg := fmt.Sprintf("namespaces %s still there (Terminating?) after %v: %v", strings.Join(left, ", "), time.Since(start).Round(time.Second), err)
		if len(why) > 0 {
			msg += "; " + strings.Join(why, "; ")
		}
		if lastErr != nil {
			msg += fmt.Sprintf("; the API server said: %v", lastErr)
		}
		errs = append(errs, errors.New(msg))
	} else {
		logf("kube target: namespaces %s deleted in %.1fs", strings.Join(nss, ", "), time.Since(start).Seconds())
	}
	return errs
}
