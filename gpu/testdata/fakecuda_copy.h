/* Copies, streams and the batch entry point of the stand-in driver
   (included by fakecuda.c). */

/* poison makes ordinal o's context sticky with e and returns e. */
static CUresult poison(int o, CUresult e) { sticky[o] = e; return e; }

static CUresult copy(CUdeviceptr d, void *h, size_t n, int in) {
	CUresult r = ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct alloc *a = find(d, n);
	int owner = a ? a->owner : 0, o = current;
	if (inject[o]) { r = poison(o, inject[o]); inject[o] = 0; }
	pthread_mutex_unlock(&mu);
	if (r) return r;
	if (!a || !h) return INVALID_VALUE;
	/* The engine that owned the memory is gone: its pages went with it. */
	if (owner > 0 && owner != getpid() && kill(owner, 0) != 0 && errno == ESRCH) {
		pthread_mutex_lock(&mu);
		poison(o, ILLEGAL_ADDRESS);
		pthread_mutex_unlock(&mu);
		return ILLEGAL_ADDRESS;
	}
	if (in) memcpy((void *)(uintptr_t)d, h, n); else memcpy(h, (void *)(uintptr_t)d, n);
	return OK;
}
static int live(CUstream s) {
	uintptr_t i = (uintptr_t)s - 0x2000;
	return i < MAX && streams[i] == current + 1;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) { return copy(d, (void *)h, n, 1); }
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) { return copy(d, h, n, 0); }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s) {
	__sync_fetch_and_add(&counters[0], 1);
	return live(s) ? copy(d, (void *)h, n, 1) : INVALID_HANDLE;
}
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s) {
	__sync_fetch_and_add(&counters[0], 1);
	return live(s) ? copy(d, h, n, 0) : INVALID_HANDLE;
}

/* isdev reports whether p lies in device memory this process maps. */
static int isdev(CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	int r = find(p, 1) != NULL;
	pthread_mutex_unlock(&mu);
	return r;
}
/* batch is cuMemcpyBatchAsync as CUDA 12.8 declares it (with failIdx). */
static CUresult batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,
		CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx, CUstream s) {
	CUresult r = ctx();
	if (r) return r;
	if (!count || !dsts || !srcs || !sizes || !attrs || !attrsIdxs || numAttrs != 1 || attrsIdxs[0] != 0) return INVALID_VALUE;
	if (attrs[0].srcAccessOrder < 1 || attrs[0].srcAccessOrder > 3) return INVALID_VALUE;
	if (!live(s)) return INVALID_HANDLE;
	__sync_fetch_and_add(&counters[1], 1);
	__sync_fetch_and_add(&counters[2], (long)count);
	for (size_t i = 0; i < count; i++) {
		int din = isdev(dsts[i]), sin = isdev(srcs[i]);
		if (din == sin) r = INVALID_VALUE;
		else if (din) r = copy(dsts[i], (void *)(uintptr_t)srcs[i], sizes[i], 1);
		else r = copy(srcs[i], (void *)(uintptr_t)dsts[i], sizes[i], 0);
		if (r) { if (failIdx) *failIdx = i; return r; }
	}
	return OK;
}
CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, unsigned long long flags, int *status) {
	if (status) *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
	*pfn = NULL;
	if (flags) return INVALID_VALUE;
	if (batch_api && ver >= 12080 && strcmp(sym, "cuMemcpyBatchAsync") == 0) {
		*pfn = (void *)batch;
		if (status) *status = 0;
		return OK;
	}
	return NOT_FOUND;
}

CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
	CUresult r = ctx();
	if (r) return r;
	if (flags & ~0x01u) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	r = INVALID_VALUE;
	for (int i = 1; i < MAX; i++)
		if (!streams[i]) { streams[i] = current + 1; *s = (CUstream)(uintptr_t)(0x2000 + i); r = OK; break; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuStreamSynchronize(CUstream s) {
	CUresult r = ctx();
	if (r) return r;
	return live(s) ? OK : INVALID_HANDLE;
}
CUresult cuStreamDestroy_v2(CUstream s) {
	CUresult r = ctx();
	if (r) return r;
	if (!live(s)) return INVALID_HANDLE;
	streams[(uintptr_t)s - 0x2000] = 0;
	return OK;
}
