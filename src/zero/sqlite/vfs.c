/*
** The one VFS of zero-cache's SQLite in a tab.
**
** zero-cache needs SQLite's bedrock branch in wal2 mode with several
** connections to one file (the replicator writes while view syncers hold
** BEGIN CONCURRENT snapshots). SQLite's own unix VFS cannot give WAL that
** under WASI: it maps the wal-index with mmap and locks with fcntl. Here
** every connection lives in one WebAssembly instance on one thread, so the
** wal-index is plain heap memory shared by the connections to a file, and
** locks are counters in a table kept per file name. Bytes live on the
** JavaScript side (the tab_* imports), which decides how they persist.
**
** Nothing here blocks: one thread cannot wait for itself, so a lock that is
** held answers SQLITE_BUSY at once and the caller retries on a later turn.
*/
#include <stdlib.h>
#include <string.h>
#include "sqlite3.h"

#define TAB_IMPORT(name) __attribute__((import_module("tab"), import_name(#name)))
TAB_IMPORT(open) int tab_open(const char *zName, int flags);
TAB_IMPORT(close) void tab_close(int id);
TAB_IMPORT(read) int tab_read(int id, void *buf, int n, double offset);
TAB_IMPORT(write) int tab_write(int id, const void *buf, int n, double offset);
TAB_IMPORT(truncate) int tab_truncate(int id, double size);
TAB_IMPORT(sync) int tab_sync(int id, int flags);
TAB_IMPORT(size) double tab_size(int id);
TAB_IMPORT(delete) int tab_delete(const char *zName);
TAB_IMPORT(exists) int tab_exists(const char *zName);
TAB_IMPORT(random) void tab_random(void *buf, int n);
TAB_IMPORT(now) double tab_now(void);

/* Lock and wal-index state shared by every connection to one file name. */
typedef struct Node Node;
struct Node {
  char *zName;
  int nRef;
  int nShared;           /* connections holding SHARED or more */
  void *pReserved;       /* the connection holding RESERVED, PENDING or EXCLUSIVE */
  int eOwnerLock;        /* that connection's level */
  int nRegion;           /* wal-index regions */
  int szRegion;
  char **apRegion;
  int nShmRef;           /* connections that mapped the wal-index */
  int aShared[SQLITE_SHM_NLOCK];   /* shared holders of each wal-index lock */
  void *apExcl[SQLITE_SHM_NLOCK];  /* exclusive holder of each wal-index lock */
  Node *pNext;
};
static Node *pNodes = 0;

typedef struct TabFile TabFile;
struct TabFile {
  sqlite3_file base;
  int id;
  int eLock;
  Node *pNode;
  int shmMapped;
  unsigned short sharedMask;
  unsigned short exclMask;
  int deleteOnClose;
  char *zDelete;
};

static Node *nodeFor(const char *zName) {
  Node *p;
  for (p = pNodes; p; p = p->pNext) {
    if (strcmp(p->zName, zName) == 0) break;
  }
  if (!p) {
    p = calloc(1, sizeof(Node));
    if (!p) return 0;
    p->zName = strdup(zName);
    if (!p->zName) { free(p); return 0; }
    p->pNext = pNodes;
    pNodes = p;
  }
  p->nRef++;
  return p;
}

static void nodeFreeRegions(Node *p) {
  for (int i = 0; i < p->nRegion; i++) free(p->apRegion[i]);
  free(p->apRegion);
  p->apRegion = 0;
  p->nRegion = 0;
}

static void nodeRelease(Node *p) {
  if (--p->nRef > 0) return;
  Node **pp;
  for (pp = &pNodes; *pp != p; pp = &(*pp)->pNext) {}
  *pp = p->pNext;
  nodeFreeRegions(p);
  free(p->zName);
  free(p);
}

static int tabClose(sqlite3_file *pFile) {
  TabFile *f = (TabFile *)pFile;
  tab_close(f->id);
  if (f->deleteOnClose && f->zDelete) tab_delete(f->zDelete);
  free(f->zDelete);
  if (f->pNode) nodeRelease(f->pNode);
  return SQLITE_OK;
}

static int tabRead(sqlite3_file *pFile, void *buf, int n, sqlite3_int64 off) {
  TabFile *f = (TabFile *)pFile;
  int got = tab_read(f->id, buf, n, (double)off);
  if (got < 0) return SQLITE_IOERR_READ;
  if (got < n) {
    memset((char *)buf + got, 0, n - got);
    return SQLITE_IOERR_SHORT_READ;
  }
  return SQLITE_OK;
}

static int tabWrite(sqlite3_file *pFile, const void *buf, int n, sqlite3_int64 off) {
  TabFile *f = (TabFile *)pFile;
  return tab_write(f->id, buf, n, (double)off);
}

static int tabTruncate(sqlite3_file *pFile, sqlite3_int64 size) {
  TabFile *f = (TabFile *)pFile;
  return tab_truncate(f->id, (double)size);
}

static int tabSync(sqlite3_file *pFile, int flags) {
  TabFile *f = (TabFile *)pFile;
  return tab_sync(f->id, flags);
}

static int tabFileSize(sqlite3_file *pFile, sqlite3_int64 *pSize) {
  TabFile *f = (TabFile *)pFile;
  double size = tab_size(f->id);
  if (size < 0) return SQLITE_IOERR_FSTAT;
  *pSize = (sqlite3_int64)size;
  return SQLITE_OK;
}

/* Lock levels as SQLite's os_unix.c grants them, between connections of one instance. */
static int tabLock(sqlite3_file *pFile, int eLock) {
  TabFile *f = (TabFile *)pFile;
  Node *p = f->pNode;
  if (f->eLock >= eLock) return SQLITE_OK;
  if (!p) { f->eLock = eLock; return SQLITE_OK; }
  if (eLock == SQLITE_LOCK_SHARED) {
    if (p->pReserved && p->pReserved != f && p->eOwnerLock >= SQLITE_LOCK_PENDING) return SQLITE_BUSY;
    p->nShared++;
    f->eLock = SQLITE_LOCK_SHARED;
    return SQLITE_OK;
  }
  if (p->pReserved && p->pReserved != f) return SQLITE_BUSY;
  if (eLock == SQLITE_LOCK_RESERVED) {
    p->pReserved = f;
    p->eOwnerLock = SQLITE_LOCK_RESERVED;
    f->eLock = SQLITE_LOCK_RESERVED;
    return SQLITE_OK;
  }
  /* EXCLUSIVE (PENDING is never asked for directly): hold PENDING while
  ** other readers remain, so no new reader starts, and answer BUSY. */
  p->pReserved = f;
  if (p->nShared > 1) {
    p->eOwnerLock = SQLITE_LOCK_PENDING;
    f->eLock = SQLITE_LOCK_PENDING;
    return SQLITE_BUSY;
  }
  p->eOwnerLock = SQLITE_LOCK_EXCLUSIVE;
  f->eLock = SQLITE_LOCK_EXCLUSIVE;
  return SQLITE_OK;
}

static int tabUnlock(sqlite3_file *pFile, int eLock) {
  TabFile *f = (TabFile *)pFile;
  Node *p = f->pNode;
  if (f->eLock <= eLock) return SQLITE_OK;
  if (p) {
    if (f->eLock >= SQLITE_LOCK_RESERVED && p->pReserved == f) {
      p->pReserved = 0;
      p->eOwnerLock = SQLITE_LOCK_NONE;
    }
    if (eLock == SQLITE_LOCK_NONE && f->eLock >= SQLITE_LOCK_SHARED) p->nShared--;
  }
  f->eLock = eLock;
  return SQLITE_OK;
}

static int tabCheckReservedLock(sqlite3_file *pFile, int *pResOut) {
  TabFile *f = (TabFile *)pFile;
  *pResOut = f->pNode && f->pNode->pReserved != 0;
  return SQLITE_OK;
}

static int tabFileControl(sqlite3_file *pFile, int op, void *pArg) {
  TabFile *f = (TabFile *)pFile;
  if (op == SQLITE_FCNTL_LOCKSTATE) {
    *(int *)pArg = f->eLock;
    return SQLITE_OK;
  }
  return SQLITE_NOTFOUND;
}

static int tabSectorSize(sqlite3_file *pFile) { return 4096; }

static int tabDeviceCharacteristics(sqlite3_file *pFile) {
  return SQLITE_IOCAP_SAFE_APPEND | SQLITE_IOCAP_SEQUENTIAL | SQLITE_IOCAP_POWERSAFE_OVERWRITE;
}

static int tabShmMap(sqlite3_file *pFile, int iRegion, int szRegion, int bExtend, void volatile **pp) {
  TabFile *f = (TabFile *)pFile;
  Node *p = f->pNode;
  *pp = 0;
  if (!p) return SQLITE_IOERR_SHMMAP;
  if (!f->shmMapped) {
    f->shmMapped = 1;
    p->nShmRef++;
  }
  if (p->nRegion > 0 && p->szRegion != szRegion) return SQLITE_IOERR_SHMSIZE;
  p->szRegion = szRegion;
  if (iRegion >= p->nRegion) {
    if (!bExtend) return SQLITE_OK;
    char **ap = realloc(p->apRegion, (iRegion + 1) * sizeof(char *));
    if (!ap) return SQLITE_NOMEM;
    p->apRegion = ap;
    while (p->nRegion <= iRegion) {
      char *region = calloc(1, szRegion);
      if (!region) return SQLITE_NOMEM;
      p->apRegion[p->nRegion++] = region;
    }
  }
  *pp = p->apRegion[iRegion];
  return SQLITE_OK;
}

static int tabShmLock(sqlite3_file *pFile, int ofst, int n, int flags) {
  TabFile *f = (TabFile *)pFile;
  Node *p = f->pNode;
  unsigned short mask = (unsigned short)(((1 << (ofst + n)) - 1) & ~((1 << ofst) - 1));
  if (!p) return SQLITE_IOERR_SHMLOCK;
  if (flags & SQLITE_SHM_UNLOCK) {
    for (int i = ofst; i < ofst + n; i++) {
      if (f->exclMask & (1 << i)) p->apExcl[i] = 0;
      if (f->sharedMask & (1 << i)) p->aShared[i]--;
    }
    f->exclMask &= ~mask;
    f->sharedMask &= ~mask;
    return SQLITE_OK;
  }
  if (flags & SQLITE_SHM_SHARED) {
    /* SQLite asks for one shared slot at a time. */
    if (f->sharedMask & mask) return SQLITE_OK;
    if (p->apExcl[ofst] && p->apExcl[ofst] != f) return SQLITE_BUSY;
    p->aShared[ofst]++;
    f->sharedMask |= mask;
    return SQLITE_OK;
  }
  for (int i = ofst; i < ofst + n; i++) {
    if (f->exclMask & (1 << i)) continue;
    if ((p->apExcl[i] && p->apExcl[i] != f) || p->aShared[i] > ((f->sharedMask & (1 << i)) ? 1 : 0)) return SQLITE_BUSY;
  }
  for (int i = ofst; i < ofst + n; i++) p->apExcl[i] = f;
  f->exclMask |= mask;
  return SQLITE_OK;
}

static void tabShmBarrier(sqlite3_file *pFile) {}

static int tabShmUnmap(sqlite3_file *pFile, int deleteFlag) {
  TabFile *f = (TabFile *)pFile;
  Node *p = f->pNode;
  if (!p || !f->shmMapped) return SQLITE_OK;
  tabShmLock(pFile, 0, SQLITE_SHM_NLOCK, SQLITE_SHM_UNLOCK);
  f->shmMapped = 0;
  if (--p->nShmRef == 0) nodeFreeRegions(p);
  return SQLITE_OK;
}

static const sqlite3_io_methods tabIoMethods = {
  2, tabClose, tabRead, tabWrite, tabTruncate, tabSync, tabFileSize, tabLock, tabUnlock,
  tabCheckReservedLock, tabFileControl, tabSectorSize, tabDeviceCharacteristics,
  tabShmMap, tabShmLock, tabShmBarrier, tabShmUnmap, 0, 0,
};

static int tempCounter = 0;

static int tabOpen(sqlite3_vfs *vfs, sqlite3_filename zName, sqlite3_file *pFile, int flags, int *pOutFlags) {
  TabFile *f = (TabFile *)pFile;
  char zTemp[64];
  memset(f, 0, sizeof(*f));
  if (!zName) {
    sqlite3_snprintf(sizeof(zTemp), zTemp, "/tmp/sqlite-temp-%d", ++tempCounter);
    zName = zTemp;
    flags |= SQLITE_OPEN_DELETEONCLOSE;
  }
  int id = tab_open(zName, flags);
  if (id < 0) return -id;
  f->id = id;
  if (flags & SQLITE_OPEN_DELETEONCLOSE) {
    f->deleteOnClose = 1;
    f->zDelete = strdup(zName);
  }
  /* Only main databases take part in locking and the wal-index. */
  if (flags & SQLITE_OPEN_MAIN_DB) {
    f->pNode = nodeFor(zName);
    if (!f->pNode) { tab_close(id); free(f->zDelete); return SQLITE_NOMEM; }
  }
  f->base.pMethods = &tabIoMethods;
  if (pOutFlags) *pOutFlags = flags;
  return SQLITE_OK;
}

static int tabDelete(sqlite3_vfs *vfs, const char *zName, int syncDir) {
  return tab_delete(zName);
}

static int tabAccess(sqlite3_vfs *vfs, const char *zName, int flags, int *pResOut) {
  *pResOut = tab_exists(zName);
  return SQLITE_OK;
}

static int tabFullPathname(sqlite3_vfs *vfs, const char *zName, int nOut, char *zOut) {
  if (zName[0] == '/') sqlite3_snprintf(nOut, zOut, "%s", zName);
  else sqlite3_snprintf(nOut, zOut, "/%s", zName);
  return SQLITE_OK;
}

static int tabRandomness(sqlite3_vfs *vfs, int n, char *zOut) {
  tab_random(zOut, n);
  return n;
}

/* There is nothing to wait for on the only thread. */
static int tabSleep(sqlite3_vfs *vfs, int microseconds) { return microseconds; }

static int tabCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *pNow) {
  /* Julian day in milliseconds: the Unix epoch is day 2440587.5. */
  *pNow = (sqlite3_int64)210866760000000LL + (sqlite3_int64)tab_now();
  return SQLITE_OK;
}

static int tabCurrentTime(sqlite3_vfs *vfs, double *pNow) {
  sqlite3_int64 ms;
  tabCurrentTimeInt64(vfs, &ms);
  *pNow = ms / 86400000.0;
  return SQLITE_OK;
}

static int tabGetLastError(sqlite3_vfs *vfs, int n, char *z) { return 0; }

static sqlite3_vfs tabVfs = {
  2, sizeof(TabFile), 1024, 0, "tabgres", 0,
  tabOpen, tabDelete, tabAccess, tabFullPathname,
  0, 0, 0, 0,
  tabRandomness, tabSleep, tabCurrentTime, tabGetLastError, tabCurrentTimeInt64,
};

int sqlite3_os_init(void) { return sqlite3_vfs_register(&tabVfs, 1); }
int sqlite3_os_end(void) { return SQLITE_OK; }
