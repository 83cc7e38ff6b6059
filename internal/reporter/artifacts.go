package reporter

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dgdr-operator/dgdr-operator/api/v1beta2"
	"github.com/dgdr-operator/dgdr-operator/internal/aisimulate/output"
	"github.com/dgdr-operator/dgdr-operator/internal/apiretry"
	"github.com/dgdr-operator/dgdr-operator/internal/candidates"
	"github.com/dgdr-operator/dgdr-operator/internal/jobcontract"
	"github.com/dgdr-operator/dgdr-operator/internal/scheme"
	"github.com/dgdr-operator/dgdr-operator/internal/searchoutput"
)

// artifactsCheckpoint is how much input is compressed between two checkpoints of gzipCapped.
const artifactsCheckpoint = 32 << 10

// artifactsReserve is what a cut leaves free under its budget: the marker line, the gzip trailer
// and the difference between a flushed and an unflushed stream.
const artifactsReserve = 8 << 10

// keepArtifacts writes the Run's artifacts ConfigMap (jobcontract.ArtifactsName) from the output
// directory: recommendation.json gets up to three quarters of jobcontract.MaxArtifactsBytes, the
// events ledger (the live one when the output directory has none yet) the rest, each
// gzip-compressed whole or cut at a line break with a candidates.TruncatedMarker line. It
// returns nil when there is nothing to keep. An error is returned only when it is transient (the
// caller retries the idempotent publication); any other failure is logged and the Run goes on
// without artifacts.
func (r *Reporter) keepArtifacts(ctx context.Context, run *v1beta2.DynamoGraphDeploymentRun) (*v1beta2.RunArtifacts, error) {
	cm, truncated, err := r.buildArtifacts(run)
	if err != nil || cm == nil {
		if err != nil {
			r.Log.Error(err, "reading the output for the artifacts")
		}
		return nil, nil
	}
	create := func() error { return r.Client.Create(ctx, cm.DeepCopy()) }
	err = create()
	if apierrors.IsAlreadyExists(err) {
		// Written by an earlier attempt (a restarted reporter, or the stop of an earlier pod):
		// replaced, so the kept output is the latest. The admission policy lets the search
		// identity delete only its own Run's artifacts.
		if err = r.Client.Delete(ctx, cm.DeepCopy()); err == nil || apierrors.IsNotFound(err) {
			err = create()
		}
	}
	if err != nil {
		if apiretry.Transient(err) {
			return nil, err
		}
		r.Log.Error(err, "keeping the artifacts", "configMap", cm.Name)
		return nil, nil
	}
	return &v1beta2.RunArtifacts{ConfigMapName: cm.Name, Truncated: truncated}, nil
}

// buildArtifacts reads and compresses the output files into the artifacts ConfigMap (nil when
// the output holds neither file).
func (r *Reporter) buildArtifacts(run *v1beta2.DynamoGraphDeploymentRun) (*corev1.ConfigMap, bool, error) {
	budget := jobcontract.MaxArtifactsBytes
	data := map[string][]byte{}
	var cut []string
	files := []struct {
		name, key string
		limit     int64
		share     int
	}{
		{output.RecommendationFile, jobcontract.ArtifactRecommendationKey, searchoutput.MaxRecommendationBytes, budget * 3 / 4},
		{output.EventsFile, jobcontract.ArtifactEventsKey, searchoutput.MaxEventsBytes, 0},
	}
	used := 0
	for _, f := range files {
		share := f.share
		if share == 0 {
			share = budget - used
		}
		path := filepath.Join(r.OutputDir, f.name)
		open := func() (io.ReadCloser, int64, error) {
			file, st, err := searchoutput.OpenRegular(path, f.name)
			if errors.Is(err, os.ErrNotExist) && f.key == jobcontract.ArtifactEventsKey {
				// A search stopped before AISimulate copied its ledger into the output directory
				// (cancelled, past its deadline): the live ledger the tail follows is kept.
				file, st, err = r.liveLedger()
			}
			if err != nil {
				return nil, 0, err
			}
			return readCloser{io.LimitReader(file, f.limit), file}, min(st.Size(), f.limit), nil
		}
		z, truncated, err := gzipCapped(open, share, func(kept, total int64) []byte {
			return fmt.Appendf(nil, "\n%s %s: kept the first %d of %d bytes, cut at a line break: the Run's artifacts ConfigMap holds at most %d bytes of compressed data (the API server refuses ConfigMaps over 1 MiB)\n",
				candidates.TruncatedMarker, f.name, kept, total, jobcontract.MaxArtifactsBytes)
		})
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		data[f.key] = z
		used += len(z)
		if truncated {
			cut = append(cut, f.name)
		}
	}
	if len(data) == 0 {
		return nil, false, nil
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      jobcontract.ArtifactsName(run.UID),
			Namespace: run.Namespace,
			Labels:    map[string]string{v1beta2.LabelRunName: run.Name, v1beta2.LabelRunUID: string(run.UID)},
		},
		BinaryData: data,
		Immutable:  ptr.To(true),
	}
	if len(cut) > 0 {
		cm.Annotations = map[string]string{jobcontract.AnnotationArtifactsTruncated: strings.Join(cut, ",")}
	}
	if err := controllerutil.SetControllerReference(run, cm, scheme.Scheme); err != nil {
		return nil, false, err
	}
	return cm, len(cut) > 0, nil
}

// liveLedger opens the monitor's ledger the tail follows; os.ErrNotExist when it follows none.
func (r *Reporter) liveLedger() (*os.File, os.FileInfo, error) {
	if r.tail == nil {
		return nil, nil, os.ErrNotExist
	}
	return r.tail.OpenLive()
}

type readCloser struct {
	io.Reader
	io.Closer
}

// gzipCapped compresses what open returns into at most budget bytes: whole when it fits,
// otherwise the longest prefix ending at a line break (at a checkpoint every
// artifactsCheckpoint bytes) followed by marker(kept, total). open is called twice when the
// content is cut (a file is streamed, never held whole in memory).
func gzipCapped(open func() (io.ReadCloser, int64, error), budget int, marker func(kept, total int64) []byte) ([]byte, bool, error) {
	rc, total, err := open()
	if err != nil {
		return nil, false, err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	br := bufio.NewReaderSize(rc, artifactsCheckpoint)
	var in, since int64
	cuts := []int64{0}
	over := false
	for !over {
		line, rerr := br.ReadSlice('\n')
		if len(line) > 0 {
			if _, err := zw.Write(line); err != nil {
				_ = rc.Close()
				return nil, false, err
			}
			in += int64(len(line))
			since += int64(len(line))
		}
		if line != nil && bytes.HasSuffix(line, []byte("\n")) && since >= artifactsCheckpoint {
			if err := zw.Flush(); err != nil {
				_ = rc.Close()
				return nil, false, err
			}
			if buf.Len() > budget-artifactsReserve {
				over = true
				break
			}
			cuts = append(cuts, in)
			since = 0
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil && !errors.Is(rerr, bufio.ErrBufferFull) {
			_ = rc.Close()
			return nil, false, rerr
		}
	}
	_ = rc.Close()
	if !over {
		if err := zw.Close(); err != nil {
			return nil, false, err
		}
		if buf.Len() <= budget {
			return buf.Bytes(), false, nil
		}
	}
	// Cut: from the last checkpoint whose compressed prefix fit, backing off if the marker does
	// not fit after all.
	for i := len(cuts) - 1; i >= 0; i-- {
		z, err := gzipPrefix(open, cuts[i], marker(cuts[i], total))
		if err != nil {
			return nil, false, err
		}
		if len(z) <= budget || i == 0 {
			return z, true, nil
		}
	}
	return nil, false, nil // not reached: cuts holds 0
}

// gzipPrefix compresses the first n bytes of what open returns, then tail.
func gzipPrefix(open func() (io.ReadCloser, int64, error), n int64, tail []byte) ([]byte, error) {
	rc, _, err := open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := io.Copy(zw, io.LimitReader(rc, n)); err != nil {
		return nil, err
	}
	if _, err := zw.Write(tail); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
