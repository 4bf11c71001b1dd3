-- -*- lua -*-
-- Lmod modulefile for an installed ddptrain (see modules/README.md).

------------------------------------------------------------------------------------------------
-- SITE SETTINGS: the modules ddptrain was built against and needs at run time, loaded first
-- with depends_on (in this order). Put your site's module names here; an empty name is skipped,
-- so on a machine where these come from the OS packages (Debian, the CI) nothing is loaded.
------------------------------------------------------------------------------------------------
local site_prerequisites = {
  { what = "MPI (the one ddptrain was built with)", name = "" }, -- e.g. "openmpi/4.1.4"
  { what = "parallel HDF5 (built with that MPI)",  name = "" }, -- e.g. "hdf5/1.10.8-mpi"
  { what = "CUDA runtime (GPU builds only)",        name = "" }, -- e.g. "cuda/12.4"
  { what = "NCCL (GPU builds only)",                name = "" }, -- e.g. "nccl/2.21"
  { what = "LibTorch, if not found via the RPATH",  name = "" }, -- e.g. "libtorch/2.3.1"
}
------------------------------------------------------------------------------------------------

local version = myModuleVersion()

-- The installation prefix. An installed copy sits at PREFIX/share/modulefiles/ddptrain/V.lua
-- (cmake --install) and finds PREFIX from its own path; the copy in the source tree's modules/
-- takes it from DDPTRAIN_PREFIX. Unloading falls back to the DDPTRAIN_ROOT set at load time,
-- so the module still unloads after DDPTRAIN_PREFIX is gone.
local function has_ddptrain(prefix)
  return prefix ~= nil and prefix ~= "" and isFile(pathJoin(prefix, "bin", "ddptrain"))
end

local installed = myFileName():match("^(.+)/share/modulefiles/[^/]+/[^/]+%.lua$")
local prefix = nil
for _, candidate in ipairs({ installed or "", os.getenv("DDPTRAIN_PREFIX") or "" }) do
  if has_ddptrain(candidate) then
    prefix = candidate
    break
  end
end
if prefix == nil and mode() == "unload" then
  prefix = os.getenv("DDPTRAIN_ROOT")
end

help([[
ddptrain ]] .. version .. [[: data-parallel LibTorch training on HPC clusters. One executable,
launched with srun or mpirun, one MPI rank per GPU (or per CPU slot); gradients are averaged over
all ranks of all nodes; checkpoints and metrics are HDF5 files.

  srun --mpi=pmix ddptrain train DECK [--section.key=value ...]
                                       (this module sets SLURM_PMIX_FENCE=ring for it)
  ddptrain --help                      every deck option
  ddptrain info                        MPI, ranks, nodes, devices, threads as ddptrain sees them

Under $DDPTRAIN_ROOT/share/ddptrain: inputs/ (example decks), slurm/ (sbatch scripts: one node,
4 nodes x 4 GPUs, CPU-only; requeue on the time limit).
]])

whatis("Name: ddptrain")
whatis("Version: " .. version)
whatis("Category: machine learning, HPC")
whatis("Description: data-parallel LibTorch training over MPI ranks (srun/mpirun), HDF5 output")

if prefix == nil then
  if mode() == "load" then
    local given = os.getenv("DDPTRAIN_PREFIX")
    LmodError("ddptrain/" .. version .. ": cannot find the installation (bin/ddptrain). "
      .. "This modulefile (" .. myFileName() .. ") is not inside an installed tree "
      .. "PREFIX/share/modulefiles/ddptrain/, and DDPTRAIN_PREFIX "
      .. (given and ("(" .. given .. ")") or "is unset, or")
      .. " does not hold bin/ddptrain. Install with `cmake --install BUILD --prefix PREFIX` and "
      .. "`module use PREFIX/share/modulefiles`, or set DDPTRAIN_PREFIX=PREFIX.")
  end
  return -- help, whatis, spider: nothing more to say without a prefix
end

for _, prerequisite in ipairs(site_prerequisites) do
  if prerequisite.name ~= nil and prerequisite.name ~= "" then
    depends_on(prerequisite.name)
  end
end

prepend_path("PATH", pathJoin(prefix, "bin"))
for _, lib in ipairs({ "lib", "lib64" }) do
  if isDir(pathJoin(prefix, lib)) then
    prepend_path("LD_LIBRARY_PATH", pathJoin(prefix, lib))
  end
end
setenv("DDPTRAIN_ROOT", prefix)
-- srun --mpi=pmix across nodes: both of MPI_Init's PMIx fences by a ring. With SLURM's default (a
-- tree for the barrier) Open MPI ranks crashed in MPI_Init now and then (slurm/README.md,
-- "MPI launch").
-- pushenv: unloading gives back the value it had before.
pushenv("SLURM_PMIX_FENCE", "ring")
