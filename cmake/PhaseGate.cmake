# phasegate — the CMake API. phasegate_add_op() turns one op (contract + suite) and its
# impl into CTest tests, one per (phase, case), gated phase by phase, plus verify_*
# targets. It never runs kernels itself: every test runs the phasegate CLI.

#[=======================================================================[.rst:
PhaseGate
---------

.. versionadded:: 0.1

Register the tests of an accelerator op developed one module at a time. For every
phase ``M<k>`` (modules M1..Mk implemented) and every case of the op's
``adversarial_suite.json`` one CTest test runs ``phasegate run``, which compares the
impl's output at the Mk boundary with the cumulative golden. The cases are listed by
``phasegate list --format json`` (discovery, like :command:`gtest_discover_tests`).

.. code-block:: cmake

  find_package(PhaseGate REQUIRED)   # or add_subdirectory(phasegate) / FetchContent
  # or: include(PhaseGate)

.. command:: phasegate_add_op

  .. code-block:: cmake

    phasegate_add_op(<op>
                     OP_DIR <dir>
                     (IMPL <target> | IMPL_COMMAND <command>... |
                      IMPL_WORKER <command>... | IMPL_PYTHON <file.py> [FUNCTION <name>] |
                      REPLAY <dir>)
                     [PHASES <k>]
                     [GOLDEN <target>]
                     [MODES <mode>...]
                     [LEVELS <level>...]
                     [RESOURCES <group>...]
                     [TIMEOUT <seconds>]
                     [GATE <ON|OFF>]
                     [REPORT_DIR <dir>]
                     [DISCOVERY_MODE <CONFIGURE|POST_BUILD|PRE_TEST>]
                     [DISCOVERY_TIMEOUT <seconds>]
                     [RUNNER <target-or-path>]
                     [LABELS <label>...]
                     [INSPECT <name>]
                     [EXTRA_ARGS <arg>...])

  Registers, in the current directory:

  * ``<op>/contract`` — ``phasegate validate`` (every contract and suite finding);
  * ``<op>/composition`` — ``phasegate selftest --suite-strength`` (composition
    verification, then the suite strength of every phase and case computed once into
    the golden cache, where every case test's report reads it: docs/runner.md "Suite
    strength");
  * ``<op>/M<k>/L<n>/<case>`` — ``phasegate run --up-to-module <k> --case <case>``
    for every phase ``k`` and every case;
  * ``<op>/M<k>/gate`` — the barrier of phase ``k`` (see ``GATE``);
  * ``<op>/e2e`` (label ``e2e``, when the op directory holds the integrated
    ``<op>_impl.py``) — ``phasegate run --e2e``: ``<op>_wrapper`` of that file against
    the op-level golden ``<op>_golden.py`` on every final output, all cases
    (docs/pypto.md "The end-to-end check");
  * ``<op>/workers/start`` and ``<op>/workers/stop`` (``IMPL``, ``IMPL_WORKER`` and
    ``IMPL_PYTHON`` only, unless ``EXTRA_ARGS`` holds ``--fresh-process``) — a CTest fixture
    (``<op>_workers``, label ``workers``) around ``phasegate serve --control
    <binary dir>/<op>_serve``, the daemon that keeps the impl's processes warm from
    one case test to the next (docs/serve.md). Every case test requires it and
    passes ``--serve-control``; a case test run without it (``ctest -FA '.*'``,
    ``-R`` of one case with ``-FA``, by hand) starts its own process and gives the
    same result. A daemon that cannot start makes ``<op>/workers/start`` *skipped*
    (exit 1), and the cases run standalone;
  * before the first build, a single ``<op>/NOT_BUILT`` test that fails with
    "build the project first".

  Labels: ``phasegate``, ``op_<op>``, ``phase_M<k>``, ``level_L<n>`` (and
  ``contract`` / ``composition`` / ``e2e`` / ``gate`` / ``workers``). A skipped run (exit 77,
  or the line ``[phasegate] SKIPPED``) is reported by CTest as skipped.

  The targets ``verify_all``, ``verify_<op>`` and ``verify_<op>_M<k>`` build the runner,
  impl and golden, run the matching tests with ``ctest --output-junit``, fill the JUnit
  failure messages of the failed cases (category, boundary, hints, repro line) and
  write the HTML report beside the JUnit file (``phasegate report``, from the report
  directories of the ops the target covers), print a phase x level summary whose last
  line names the HTML page, and fail the build when a test failed or did not run.

  ``<op>``
    The test namespace, ``[A-Za-z0-9_.-]+``. Usually the contract's op name; two
    registrations of one contract (two impls) need two names.

  ``OP_DIR <dir>``
    Directory holding ``module_interfaces.yaml`` and ``adversarial_suite.json``
    (or ``<dir>/eval/``, the pypto layout). Relative to the current source dir.

  ``IMPL <target>``
    A shared library target (``add_library(... MODULE|SHARED)``) exporting the
    ``<op>_module<suffix>_wrapper`` functions; run as ``--impl plugin:$<TARGET_FILE>``.

  ``IMPL_COMMAND <command>...``
    A command (``exec:`` adapter); generator expressions are allowed. The words are
    joined with spaces, so quote words containing spaces yourself. Case tests run in
    the current binary directory (as ``<op>/workers/start`` does): use absolute paths.

  ``IMPL_WORKER <command>...``
    .. versionadded:: 0.2

    A persistent command (``worker:`` adapter, docs/worker_protocol.md): started once
    per mode and device and serving every case, so Python + torch or a CUDA context
    start once (kept warm across case tests by ``<op>/workers/start``). Same word
    rules as ``IMPL_COMMAND``.

  ``IMPL_PYTHON <file.py> [FUNCTION <name>]``
    .. versionadded:: 0.2

    An impl module written for the pypto op workflow (``python:`` adapter,
    docs/python.md): phasegate's Python worker imports ``<file.py>`` (relative to the
    current source dir) and calls ``<op>_module<suffix>_wrapper(*primary_inputs)`` for
    each phase, or ``<name>`` for every phase. ``<file.py>`` may be a directory: the
    verifier workflow's ``custom/<op>/modules/`` with one staged file per phase, phase
    ``<suffix>`` imported from ``<dir>/<op>_module<suffix>_impl.py``. Persistent like
    ``IMPL_WORKER``. The interpreter is ``PHASEGATE_PYTHON`` (a cache variable), else ``Python3_EXECUTABLE``
    when the project found Python, else the runner's default (``$PHASEGATE_PYTHON``,
    ``python3``); it is passed as ``--python`` to ``run`` and ``serve``.

  ``REPLAY <dir>``
    Outputs dumped by a device run, ``<dir>/<case>/<mode>/<name>.npy``.

  ``PHASES <k>``
    The phases implemented so far (``1..N``). Later phases stay listed (label
    ``not_implemented``); ``run --implemented-phases <k>`` skips their cases ("M<j> not
    implemented yet (PHASES <k>)") without touching the impl, so a new op is green
    from day one. Default: every phase is run.

  ``GOLDEN <target>``
    Golden plugin library target, passed as ``--golden-lib`` to ``run`` and ``selftest``.

  ``MODES <mode>...``
    Modes to run (``--modes``); default: the runner's (``sim``).

  ``LEVELS <level>...``
    Only register cases of these levels (``L0``..``L5`` or ``0``..``5``).

  ``RESOURCES <group>...``
    CTest ``RESOURCE_GROUPS`` of every case test, e.g. ``npus:1``. Run ctest with
    ``--resource-spec-file``; the runner takes its device id from
    ``CTEST_RESOURCE_GROUP_0_<TYPE>``.

  ``TIMEOUT <seconds>``
    Per impl call (``run --timeout``). The CTest ``TIMEOUT`` of a case test is
    ``<seconds> * <number of modes> + 60`` so the runner, not CTest, reports a hang.

  ``GATE <ON|OFF>``
    Default ``ON``: the cases of phase ``k`` need every case of phase ``k-1`` to
    pass (or skip), through CTest fixtures, so ``ctest -L phase_M3`` first runs M1
    and M2 and reports M3 as not run when one of them fails. ``OFF`` drops it;
    ``ctest -FA '.*'`` skips it for one run.

  ``REPORT_DIR <dir>``
    Where ``evaluation_report.json`` files go, ``<dir>/<contract op>/M<k>/``.
    Default ``${CMAKE_CURRENT_BINARY_DIR}/phasegate-reports``.

  ``DISCOVERY_MODE <CONFIGURE|POST_BUILD|PRE_TEST>``
    When ``phasegate list`` runs. ``CONFIGURE`` (default for an imported or
    installed runner, or a path): at configure time; the contract, suite and runner
    re-trigger a configure when they change. ``POST_BUILD`` (default for a runner
    built by this project): after the runner is built, in a per-op custom target
    ``phasegate_discover_<op>`` that reruns when the runner, contract or suite
    changes. ``PRE_TEST``: when ctest reads the tests, if they are stale (suits
    cross builds and hosts without the accelerator). The default can be set
    project-wide with ``PHASEGATE_DISCOVERY_MODE``.

  ``DISCOVERY_TIMEOUT <seconds>``
    Limit for ``phasegate list`` (default 60).

  ``RUNNER <target-or-path>``
    The phasegate CLI. Default: the ``phasegate::phasegate`` target (exists after
    ``find_package(PhaseGate)`` or ``add_subdirectory``).

  ``LABELS <label>...``
    Extra labels for every test of the op.

  ``INSPECT <name>``
    .. versionadded:: 0.1

    Adds ``--inspect <name>`` to every case test: for a pypto-layout op whose phase
    golden file defines ``module_<k>_inspect``, the workflow's inspection probe ``<name>``
    is computed and compared per iteration (docs/pypto.md "Inspection probes"); off by
    default, so a default ``ctest`` stays cheap. Without the argument, the variable
    ``PHASEGATE_<op>_INSPECT`` (``cmake -DPHASEGATE_<op>_INSPECT=h``) gives it.

  ``EXTRA_ARGS <arg>...``
    Appended to every ``phasegate run`` command line (before ``--serve-control``).
    ``--fresh-process`` drops the ``<op>/workers/start|stop`` pair (such runs never
    lease); ``--memory-limit N`` is passed to ``phasegate serve`` too (part of a warm
    process's key).

  .. note::
    Call :command:`enable_testing` (or ``include(CTest)``) in the top-level
    ``CMakeLists.txt``. Paths of the runner, impl and golden must not contain ``;``.
    CTest resolves fixtures by name in linear time, so the gate is a barrier test
    per phase rather than a dependency of every case on every case of the phase
    before (which is quadratic in the number of cases).

  Example:

  .. code-block:: cmake

    add_library(attention_impl MODULE attention_impl.c)
    target_link_libraries(attention_impl PRIVATE phasegate::abi)
    phasegate_add_op(attention
      OP_DIR   custom/attention
      IMPL     attention_impl
      MODES    sim npu
      RESOURCES npus:1
      TIMEOUT  300)

#]=======================================================================]

include_guard(GLOBAL)
# The helpers below keep these policies whatever the including project sets.
cmake_policy(PUSH)
cmake_policy(VERSION 3.25)

# The interpreter of IMPL_PYTHON impls (empty: Python3_EXECUTABLE when known).
set(PHASEGATE_PYTHON "" CACHE STRING
    "Python interpreter of phasegate_add_op(... IMPL_PYTHON) impls (empty: Python3_EXECUTABLE, else python3)")

# _phasegate_bracket(<out> <text>): the bracket quoting, shared with PhaseGateDiscover.cmake.
include("${CMAKE_CURRENT_LIST_DIR}/PhaseGateQuote.cmake")

# Finds the contract and suite in DIR or DIR/eval.
function(_phasegate_find_specs dir out_contract out_suite)
  foreach(d "${dir}" "${dir}/eval")
    if(EXISTS "${d}/module_interfaces.yaml" AND EXISTS "${d}/adversarial_suite.json")
      set(${out_contract} "${d}/module_interfaces.yaml" PARENT_SCOPE)
      set(${out_suite} "${d}/adversarial_suite.json" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out_contract} "" PARENT_SCOPE)
  set(${out_suite} "" PARENT_SCOPE)
endfunction()

# The module count, read at configure time to name the verify_<op>_M<k> targets:
# the suite's total_modules, else the number of `- id:` entries in the contract.
function(_phasegate_module_count contract suite out)
  file(READ "${suite}" json)
  string(JSON n ERROR_VARIABLE jerr GET "${json}" total_modules)
  if(NOT jerr AND n MATCHES "^[1-9][0-9]*$")
    set(${out} "${n}" PARENT_SCOPE)
    return()
  endif()
  file(STRINGS "${contract}" ids REGEX "^[ \t-]*id:[ \t]*[0-9]+")
  list(LENGTH ids n)
  set(${out} "${n}" PARENT_SCOPE)
endfunction()

# The on-disk file of an imported executable for the current build type.
function(_phasegate_imported_location target out)
  set(loc "")
  if(CMAKE_BUILD_TYPE)
    string(TOUPPER "${CMAKE_BUILD_TYPE}" cfg)
    get_target_property(loc ${target} IMPORTED_LOCATION_${cfg})
  endif()
  if(NOT loc)
    get_target_property(loc ${target} IMPORTED_LOCATION)
  endif()
  if(NOT loc)
    get_target_property(cfgs ${target} IMPORTED_CONFIGURATIONS)
    foreach(c IN LISTS cfgs)
      string(TOUPPER "${c}" c)
      get_target_property(loc ${target} IMPORTED_LOCATION_${c})
      if(loc)
        break()
      endif()
    endforeach()
  endif()
  set(${out} "${loc}" PARENT_SCOPE)
endfunction()

# Checks that TARGET exists and is a loadable library (for IMPL and GOLDEN).
function(_phasegate_check_library keyword target)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "phasegate_add_op: ${keyword} '${target}' is not a target "
      "(define it with add_library(${target} MODULE ...) before phasegate_add_op)")
  endif()
  get_target_property(type "${target}" TYPE)
  if(NOT type MATCHES "^(SHARED_LIBRARY|MODULE_LIBRARY)$")
    message(FATAL_ERROR "phasegate_add_op: ${keyword} '${target}' is a ${type}; "
      "it must be a SHARED or MODULE library (the runner loads it with dlopen)")
  endif()
endfunction()

# IMPL_PYTHON <file> [FUNCTION <name>]: the python: spec (absolute path) and the
# --python arguments (PHASEGATE_PYTHON, else Python3_EXECUTABLE, else none).
function(_phasegate_python_impl file function out_spec out_args)
  get_filename_component(path "${file}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(NOT path MATCHES "[$]<" AND NOT EXISTS "${path}")
    message(FATAL_ERROR "phasegate_add_op: IMPL_PYTHON '${path}' does not exist")
  endif()
  set(spec "python:${path}")
  if(NOT function STREQUAL "")
    if(NOT function MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
      message(FATAL_ERROR "phasegate_add_op: FUNCTION '${function}' is not a Python name")
    endif()
    string(APPEND spec "::${function}")
  endif()
  set(args "")
  if(NOT "${PHASEGATE_PYTHON}" STREQUAL "")
    set(args --python "${PHASEGATE_PYTHON}")
  elseif(NOT "${Python3_EXECUTABLE}" STREQUAL "")
    set(args --python "${Python3_EXECUTABLE}")
  endif()
  set(${out_spec} "${spec}" PARENT_SCOPE)
  set(${out_args} "${args}" PARENT_SCOPE)
endfunction()

# Adds (once) a verify target running the tests whose labels match every regex in
# ARGN, and makes it depend on DEPS. After ctest it runs `RUNNER report` (the first
# op's runner) on the report directories of every op it covers (REPORT_DIR, collected
# in the target's PHASEGATE_REPORT_DIRS property), for the JUnit failure messages and
# the HTML page.
function(_phasegate_verify_target name deps runner report_dir)
  if(NOT TARGET ${name})
    set(label_args "")
    set(i 0)
    foreach(re IN LISTS ARGN)
      math(EXPR i "${i} + 1")
      list(APPEND label_args "-DPG_LABEL_${i}=${re}")
    endforeach()
    get_property(multi GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
    set(cfg_arg "")
    if(multi)
      set(cfg_arg "-DPG_CONFIG=$<CONFIG>")
    endif()
    # $<SEMICOLON> keeps the list one argument (ctest regexes may hold '|').
    string(REPLACE ";" "$<SEMICOLON>" extra "${PHASEGATE_VERIFY_CTEST_ARGS}")
    add_custom_target(${name}
      COMMAND "${CMAKE_COMMAND}"
              "-DPG_CTEST=${CMAKE_CTEST_COMMAND}"
              "-DPG_TEST_DIR=${CMAKE_BINARY_DIR}"
              "-DPG_JUNIT=${CMAKE_BINARY_DIR}/phasegate-junit/${name}.xml"
              "-DPG_TITLE=${name}"
              "-DPG_EXTRA_ARGS=${extra}"
              "-DPG_RUNNER=${runner}"
              "-DPG_REPORT_DIRS=$<TARGET_PROPERTY:${name},PHASEGATE_REPORT_DIRS>"
              ${cfg_arg} ${label_args}
              -P "${_PHASEGATE_CMAKE_DIR}/PhaseGateSummary.cmake"
      USES_TERMINAL VERBATIM
      COMMENT "phasegate: ${name}")
  endif()
  get_target_property(dirs ${name} PHASEGATE_REPORT_DIRS)
  if(NOT dirs OR NOT report_dir IN_LIST dirs)
    set_property(TARGET ${name} APPEND PROPERTY PHASEGATE_REPORT_DIRS "${report_dir}")
  endif()
  if(deps)
    add_dependencies(${name} ${deps})
  endif()
endfunction()

# ---- the steps of phasegate_add_op() ----------------------------------------------------
# phasegate_add_op() parses its arguments into arg_<KEYWORD> (cmake_parse_arguments) and
# runs the steps below in order. Each step reads `op`, the arg_<KEYWORD> variables and
# the results of earlier steps named under "Reads" in its comment (variables of
# phasegate_add_op(), seen by the functions it calls), and returns what it names under
# "Sets" with PARENT_SCOPE. Nothing else passes between the steps: no cache variables,
# no global properties besides the PHASEGATE_OPS registry of added ops.

# Step 1: the op name, the argument list, OP_DIR and PHASES.
# Reads: op, arg_*. Sets: op_dir, contract, suite, n_modules, phases.
function(_phasegate_check_args)
  if(NOT op MATCHES "^[A-Za-z0-9_.-]+$")
    message(FATAL_ERROR "phasegate_add_op: op name '${op}' must match [A-Za-z0-9_.-]+ "
      "(it becomes test, label, fixture and target names)")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "phasegate_add_op(${op}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  foreach(kw IN LISTS arg_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "phasegate_add_op(${op}): ${kw} needs a value")
  endforeach()
  get_property(added GLOBAL PROPERTY PHASEGATE_OPS)
  if(op IN_LIST added)
    get_property(where GLOBAL PROPERTY PHASEGATE_OP_${op}_DIR)
    message(FATAL_ERROR "phasegate_add_op: op '${op}' was already added (in ${where}); "
      "test names must be unique: give the second registration another name")
  endif()

  if(NOT arg_OP_DIR)
    message(FATAL_ERROR "phasegate_add_op(${op}): OP_DIR is required")
  endif()
  get_filename_component(op_dir "${arg_OP_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  _phasegate_find_specs("${op_dir}" contract suite)
  if(NOT contract)
    message(FATAL_ERROR "phasegate_add_op(${op}): OP_DIR '${op_dir}' holds no "
      "module_interfaces.yaml + adversarial_suite.json (looked in the directory and in eval/)")
  endif()
  _phasegate_module_count("${contract}" "${suite}" n_modules)

  set(phases "${arg_PHASES}") # phases 1..k implemented so far: run --implemented-phases k
  if(DEFINED arg_PHASES AND (NOT phases MATCHES "^[1-9][0-9]*$"
                             OR (n_modules GREATER 0 AND phases GREATER n_modules)))
    message(FATAL_ERROR "phasegate_add_op(${op}): PHASES '${phases}' is not valid: the phases "
      "implemented so far must be a whole number in 1..${n_modules} (op '${op}' has "
      "${n_modules} modules)") # n_modules 0: unknown here, discovery checks it
  endif()
  foreach(v op_dir contract suite n_modules phases)
    set(${v} "${${v}}" PARENT_SCOPE)
  endforeach()
endfunction()

# IMPL_COMMAND / IMPL_WORKER <command>... (KW): the SCHEME (exec, worker) spec of WORDS
# joined with spaces, in OUT_SPEC; warns about a word that is a relative source path.
function(_phasegate_command_impl op kw scheme words out_spec)
  set(words ${words})
  foreach(word IN LISTS words)
    if(NOT IS_ABSOLUTE "${word}" AND NOT word MATCHES "^[$]<"
       AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/${word}"
       AND NOT IS_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}/${word}")
      message(AUTHOR_WARNING "phasegate_add_op(${op}): ${kw} word '${word}' is a "
        "relative path, but the tests run in ${CMAKE_CURRENT_BINARY_DIR}; "
        "write \${CMAKE_CURRENT_SOURCE_DIR}/${word}")
    endif()
  endforeach()
  list(JOIN words " " cmd)
  set(${out_spec} "${scheme}:${cmd}" PARENT_SCOPE)
endfunction()

# Step 2: the impl (exactly one of IMPL, IMPL_COMMAND, IMPL_WORKER, IMPL_PYTHON, REPLAY)
# and GOLDEN.
# Reads: op, arg_IMPL, arg_IMPL_COMMAND, arg_IMPL_WORKER, arg_IMPL_PYTHON, arg_FUNCTION,
# arg_REPLAY, arg_GOLDEN.
# Sets: impl_spec (the --impl argument), impl_deps (targets the tests need built),
# persistent (ON: plugin and worker impls keep warm processes, phasegate serve),
# python_args (--python of a python: impl, for run and serve alike), golden_args.
function(_phasegate_impl_spec)
  set(n_impl 0)
  foreach(kw IMPL IMPL_COMMAND IMPL_WORKER IMPL_PYTHON REPLAY)
    if(DEFINED arg_${kw})
      math(EXPR n_impl "${n_impl} + 1")
    endif()
  endforeach()
  if(NOT n_impl EQUAL 1)
    message(FATAL_ERROR "phasegate_add_op(${op}): give exactly one of IMPL <target>, "
      "IMPL_COMMAND <command...>, IMPL_WORKER <command...>, IMPL_PYTHON <file.py> or "
      "REPLAY <dir>")
  endif()
  if(DEFINED arg_FUNCTION AND NOT DEFINED arg_IMPL_PYTHON)
    message(FATAL_ERROR "phasegate_add_op(${op}): FUNCTION goes with IMPL_PYTHON")
  endif()
  set(python_args "")
  set(persistent OFF)
  set(impl_deps "")
  if(DEFINED arg_IMPL)
    _phasegate_check_library(IMPL "${arg_IMPL}")
    set(impl_spec "plugin:$<TARGET_FILE:${arg_IMPL}>")
    set(impl_deps ${arg_IMPL})
    set(persistent ON)
  elseif(DEFINED arg_IMPL_COMMAND)
    _phasegate_command_impl("${op}" IMPL_COMMAND exec "${arg_IMPL_COMMAND}" impl_spec)
  elseif(DEFINED arg_IMPL_WORKER)
    _phasegate_command_impl("${op}" IMPL_WORKER worker "${arg_IMPL_WORKER}" impl_spec)
    set(persistent ON)
  elseif(DEFINED arg_IMPL_PYTHON)
    _phasegate_python_impl("${arg_IMPL_PYTHON}" "${arg_FUNCTION}" impl_spec python_args)
    set(persistent ON)
  else()
    get_filename_component(replay "${arg_REPLAY}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(impl_spec "replay:${replay}")
  endif()

  set(golden_args "")
  if(DEFINED arg_GOLDEN)
    _phasegate_check_library(GOLDEN "${arg_GOLDEN}")
    set(golden_args --golden-lib "$<TARGET_FILE:${arg_GOLDEN}>")
    list(APPEND impl_deps ${arg_GOLDEN})
  endif()
  foreach(v impl_spec impl_deps persistent python_args golden_args)
    set(${v} "${${v}}" PARENT_SCOPE)
  endforeach()
endfunction()

# Step 3: the checks of MODES, LEVELS, RESOURCES, TIMEOUT, GATE, DISCOVERY_TIMEOUT,
# LABELS, and REPORT_DIR.
# Reads: op, arg_MODES, arg_LEVELS, arg_RESOURCES, arg_TIMEOUT, arg_GATE,
# arg_DISCOVERY_TIMEOUT, arg_LABELS, arg_REPORT_DIR.
# Sets: levels_csv (L1,L2; empty: all), ctest_timeout (the CTest TIMEOUT of a case test,
# empty: none), gate (ON/OFF), discovery_timeout, report_dir.
function(_phasegate_check_options)
  foreach(m IN LISTS arg_MODES)
    if(NOT m MATCHES "^[A-Za-z0-9_.-]+$")
      message(FATAL_ERROR "phasegate_add_op(${op}): bad mode '${m}' (modes match [A-Za-z0-9_.-]+)")
    endif()
  endforeach()
  list(LENGTH arg_MODES n_modes)

  set(levels "")
  foreach(l IN LISTS arg_LEVELS)
    if(l MATCHES "^[Ll]?([0-5])$")
      list(APPEND levels "L${CMAKE_MATCH_1}")
    else()
      message(FATAL_ERROR "phasegate_add_op(${op}): bad level '${l}' (expected L0..L5)")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES levels)
  list(JOIN levels "," levels_csv)

  set(rg_re "[a-z_][a-z0-9_]*:[1-9][0-9]*")
  foreach(g IN LISTS arg_RESOURCES)
    if(NOT g MATCHES "^([1-9][0-9]*,)?${rg_re}(,${rg_re})*$")
      message(FATAL_ERROR "phasegate_add_op(${op}): bad RESOURCES group '${g}' "
        "(expected [<count>,]<type>:<slots>[,<type>:<slots>...], e.g. npus:1)")
    endif()
  endforeach()

  set(ctest_timeout "")
  if(DEFINED arg_TIMEOUT)
    if(NOT arg_TIMEOUT MATCHES "^[0-9]+$" OR arg_TIMEOUT EQUAL 0)
      message(FATAL_ERROR "phasegate_add_op(${op}): TIMEOUT must be a positive number of seconds, not '${arg_TIMEOUT}'")
    endif()
    set(m ${n_modes})
    if(m EQUAL 0)
      set(m 1)
    endif()
    math(EXPR ctest_timeout "${arg_TIMEOUT} * ${m} + 60")
  endif()

  set(gate ON)
  if(DEFINED arg_GATE)
    if(NOT arg_GATE MATCHES "^(ON|OFF|TRUE|FALSE|YES|NO|1|0)$")
      message(FATAL_ERROR "phasegate_add_op(${op}): GATE must be ON or OFF, not '${arg_GATE}'")
    endif()
    if(NOT arg_GATE)
      set(gate OFF)
    endif()
  endif()

  set(discovery_timeout 60)
  if(DEFINED arg_DISCOVERY_TIMEOUT)
    if(NOT arg_DISCOVERY_TIMEOUT MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "phasegate_add_op(${op}): DISCOVERY_TIMEOUT must be a positive number of seconds")
    endif()
    set(discovery_timeout ${arg_DISCOVERY_TIMEOUT})
  endif()

  foreach(l IN LISTS arg_LABELS)
    if(NOT l MATCHES "^[A-Za-z0-9_.:+-]+$")
      message(FATAL_ERROR "phasegate_add_op(${op}): bad label '${l}' (labels match [A-Za-z0-9_.:+-]+)")
    endif()
  endforeach()

  if(DEFINED arg_REPORT_DIR)
    get_filename_component(report_dir "${arg_REPORT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(report_dir "${CMAKE_CURRENT_BINARY_DIR}/phasegate-reports")
  endif()
  foreach(v levels_csv ctest_timeout gate discovery_timeout report_dir)
    set(${v} "${${v}}" PARENT_SCOPE)
  endforeach()
endfunction()

# Step 4: the runner and the discovery mode.
# Reads: op, arg_RUNNER, arg_DISCOVERY_MODE, PHASEGATE_DISCOVERY_MODE.
# Sets: runner_target (the runner's non-alias target, empty for a path), runner_now (its
# path at configure time when it already exists, else empty), runner_file (its path,
# maybe a generator expression), discovery_mode (CONFIGURE, POST_BUILD or PRE_TEST).
function(_phasegate_runner)
  if(DEFINED arg_RUNNER)
    set(runner "${arg_RUNNER}")
  elseif(TARGET phasegate::phasegate)
    set(runner phasegate::phasegate)
  else()
    message(FATAL_ERROR "phasegate_add_op(${op}): no phasegate runner: call "
      "find_package(PhaseGate) or add_subdirectory(<phasegate>) first, or pass RUNNER")
  endif()
  set(runner_target "")
  set(runner_now "")
  if(TARGET "${runner}")
    get_target_property(aliased "${runner}" ALIASED_TARGET)
    if(aliased)
      set(runner_target "${aliased}")
    else()
      set(runner_target "${runner}")
    endif()
    get_target_property(type "${runner_target}" TYPE)
    if(NOT type STREQUAL "EXECUTABLE")
      message(FATAL_ERROR "phasegate_add_op(${op}): RUNNER '${runner}' is a ${type}, not an executable")
    endif()
    set(runner_file "$<TARGET_FILE:${runner_target}>")
    get_target_property(imported "${runner_target}" IMPORTED)
    if(imported)
      _phasegate_imported_location("${runner_target}" runner_now)
    endif()
  else()
    get_filename_component(runner_now "${runner}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${runner_now}" OR IS_DIRECTORY "${runner_now}")
      message(FATAL_ERROR "phasegate_add_op(${op}): RUNNER '${runner}' is neither a target nor an existing file")
    endif()
    set(runner_file "${runner_now}")
  endif()

  if(DEFINED arg_DISCOVERY_MODE)
    set(mode "${arg_DISCOVERY_MODE}")
  elseif(PHASEGATE_DISCOVERY_MODE)
    set(mode "${PHASEGATE_DISCOVERY_MODE}")
  elseif(runner_now)
    set(mode CONFIGURE)
  else()
    set(mode POST_BUILD)
  endif()
  if(NOT mode MATCHES "^(CONFIGURE|POST_BUILD|PRE_TEST)$")
    message(FATAL_ERROR "phasegate_add_op(${op}): unknown DISCOVERY_MODE '${mode}' "
      "(expected CONFIGURE, POST_BUILD or PRE_TEST)")
  endif()
  if(mode STREQUAL "CONFIGURE" AND NOT runner_now)
    message(FATAL_ERROR "phasegate_add_op(${op}): DISCOVERY_MODE CONFIGURE needs a runner "
      "that exists at configure time (an installed phasegate or a path); "
      "'${runner}' is built by this project: use POST_BUILD or PRE_TEST")
  endif()
  set(runner_target "${runner_target}" PARENT_SCOPE)
  set(runner_now "${runner_now}" PARENT_SCOPE)
  set(runner_file "${runner_file}" PARENT_SCOPE)
  set(discovery_mode "${mode}" PARENT_SCOPE)
endfunction()

# The --memory-limit of ARGS (run's EXTRA_ARGS) in the spelling `phasegate serve` reads,
# in OUT (empty: none, or one serve does not read).
function(_phasegate_serve_memory_limit args out)
  set(limit "")
  set(prev "")
  foreach(a IN LISTS args)
    if(prev STREQUAL "--memory-limit")
      set(limit "${a}")
    elseif(a MATCHES "^--memory-limit=(.*)$")
      set(limit "${CMAKE_MATCH_1}")
    endif()
    set(prev "${a}")
  endforeach()
  # serve reads whole numbers with an optional K/M/G only (run also takes 1.5G, 512MB):
  # other spellings are not forwarded, which only costs the prestart its match.
  if(limit MATCHES "^([0-9]+)([KkMmGg]?)[Bb]?$")
    set(limit "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
  else()
    set(limit "")
  endif()
  set(${out} "${limit}" PARENT_SCOPE)
endfunction()

# Step 5: the arguments every `phasegate run` of a case test gets, and the warm processes.
# Reads: op, arg_MODES, arg_TIMEOUT, arg_INSPECT, arg_EXTRA_ARGS, report_dir, phases, python_args,
# golden_args, persistent, serve_control.
# Sets: run_extra, persistent (OFF with --fresh-process), workers_fixture (the fixture
# of <op>/workers/start|stop, empty: none), serve_memory_limit.
function(_phasegate_run_args)
  set(run_extra "")
  if(arg_MODES)
    list(JOIN arg_MODES "," modes_csv)
    list(APPEND run_extra --modes "${modes_csv}")
  endif()
  # the registration names its reports, and the <op>/report/session test's file joins
  # the case tests of one ctest invocation into one report per phase
  list(APPEND run_extra --report-dir "${report_dir}" --report-name "${op}"
       --report-session "${report_dir}/${op}/.session")
  if(DEFINED arg_TIMEOUT)
    list(APPEND run_extra --timeout "${arg_TIMEOUT}")
  endif()
  if(phases)
    list(APPEND run_extra --implemented-phases "${phases}")
  endif()
  # the workflow's inspection probes: opt-in (INSPECT, or PHASEGATE_<op>_INSPECT)
  if(NOT arg_INSPECT AND DEFINED PHASEGATE_${op}_INSPECT)
    set(arg_INSPECT "${PHASEGATE_${op}_INSPECT}")
  endif()
  if(arg_INSPECT)
    list(APPEND run_extra --inspect "${arg_INSPECT}")
  endif()
  list(APPEND run_extra ${python_args} ${golden_args} ${arg_EXTRA_ARGS})
  # `run --fresh-process` never leases from the daemon: no warm processes to keep.
  if("--fresh-process" IN_LIST arg_EXTRA_ARGS)
    set(persistent OFF)
  endif()
  # The daemon's prestarted processes serve a case test only when their key matches
  # the test's (docs/serve.md "Keys"): same memory limit, same working directory (the
  # case tests and <op>/workers/start both run in the current binary directory).
  _phasegate_serve_memory_limit("${arg_EXTRA_ARGS}" serve_memory_limit)
  set(workers_fixture "")
  if(persistent)
    list(APPEND run_extra --serve-control "${serve_control}")
    set(workers_fixture "${op}_workers")
  endif()
  foreach(v run_extra persistent workers_fixture serve_memory_limit)
    set(${v} "${${v}}" PARENT_SCOPE)
  endforeach()
endfunction()

# Step 6: where discovery writes the tests file, and its -D definitions.
# Reads: op, arg_RESOURCES, arg_LABELS, base, multi, discovery_mode, op_dir, levels_csv,
# gate, ctest_timeout, workers_fixture, phases, discovery_timeout.
# Sets: tests_file, signature (of everything the tests file depends on besides the list
# output), discover_defs (the PG_* inputs of PhaseGateDiscover.cmake, -D<name>=<value>).
function(_phasegate_discover_defs)
  if(multi AND NOT discovery_mode STREQUAL "CONFIGURE")
    # Each configuration discovers with its own runner build.
    set(tests_file "${base}_tests-$<CONFIG>.cmake")
  else()
    set(tests_file "${base}_tests.cmake")
  endif()
  list(JOIN arg_RESOURCES "|" resources_enc)
  list(JOIN arg_LABELS "|" labels_enc)
  set(signature_text "${op}|${op_dir}|${levels_csv}|${gate}|${ctest_timeout}|${resources_enc}|${labels_enc}|${workers_fixture}|${phases}")
  string(MD5 signature "${signature_text}")
  set(discover_defs
    "-DPG_OP=${op}" "-DPG_OP_DIR=${op_dir}" "-DPG_LEVELS=${levels_csv}"
    "-DPG_TESTS_FILE=${tests_file}" "-DPG_GATE=${gate}" "-DPG_CTEST_TIMEOUT=${ctest_timeout}"
    "-DPG_RESOURCES=${resources_enc}" "-DPG_LABELS=${labels_enc}"
    "-DPG_SIGNATURE=${signature}" "-DPG_DISCOVERY_TIMEOUT=${discovery_timeout}"
    "-DPG_WORKERS_FIXTURE=${workers_fixture}" "-DPG_PHASES=${phases}")
  set(tests_file "${tests_file}" PARENT_SCOPE)
  set(signature "${signature}" PARENT_SCOPE)
  set(discover_defs "${discover_defs}" PARENT_SCOPE)
endfunction()

# The lines of the CTest include file that rediscover a stale tests file (PRE_TEST):
# DEFS (-D<name>=<value>) become set() lines; in OUT.
function(_phasegate_pre_test_call out defs discover_script contract suite)
  set(pre_defs "")
  foreach(d IN LISTS defs)
    string(REGEX REPLACE "^-D([A-Z_]+)=(.*)$" "\\1" k "${d}")
    string(REGEX REPLACE "^-D([A-Z_]+)=(.*)$" "\\2" v "${d}")
    _phasegate_bracket(qv "${v}")
    string(APPEND pre_defs "  set(${k} ${qv})\n")
  endforeach()
  _phasegate_bracket(q_discover_script "${discover_script}")
  _phasegate_bracket(q_contract "${contract}")
  _phasegate_bracket(q_suite "${suite}")
  set(${out} "\
  include(${q_discover_script})
${pre_defs}  set(PG_RUNNER \"\${_pg_runner}\")
  set(PG_CONTRACT ${q_contract})
  set(PG_SUITE ${q_suite})
  phasegate__discover_if_stale()
" PARENT_SCOPE)
endfunction()

# The <op>/workers/start|stop tests of the CTest include file, in OUT. MODES, the
# memory limit and PYTHON_ARGS are passed to `phasegate serve` (part of a warm
# process's key); EXTRA_LABELS is ";<label>..." of LABELS.
function(_phasegate_workers_tests out op modes serve_memory_limit python_args
         serve_control op_dir work_dir extra_labels)
  set(serve_opts "")
  if(modes)
    list(JOIN modes "," m)
    set(serve_opts " --modes [==[${m}]==]")
  endif()
  if(NOT serve_memory_limit STREQUAL "")
    _phasegate_bracket(q "${serve_memory_limit}")
    string(APPEND serve_opts " --memory-limit ${q}")
  endif()
  foreach(a IN LISTS python_args) # the same interpreter: the same warm process
    _phasegate_bracket(q "${a}")
    string(APPEND serve_opts " ${q}")
  endforeach()
  foreach(v serve_control op_dir work_dir)
    _phasegate_bracket(q_${v} "${${v}}")
  endforeach()
  # The daemon outlives single tests: `serve` starts it detached and returns once it
  # answers; the cleanup test stops it. It is only a speed-up: when it cannot start
  # (exit 1) the start test is skipped, not failed, so the cases still run
  # (standalone, same results) instead of being "Not Run".
  set(${out} "\
  add_test([==[${op}/workers/start]==] \"\${_pg_runner}\" serve --control ${q_serve_control}
           --op-dir ${q_op_dir} --impl \"\${_pg_impl}\"${serve_opts})
  set_tests_properties([==[${op}/workers/start]==] PROPERTIES
    LABELS [==[phasegate;op_${op};workers${extra_labels}]==] FIXTURES_SETUP [==[${op}_workers]==]
    WORKING_DIRECTORY ${q_work_dir} SKIP_RETURN_CODE 1)
  add_test([==[${op}/workers/stop]==] \"\${_pg_runner}\" serve --control ${q_serve_control} --stop)
  set_tests_properties([==[${op}/workers/stop]==] PROPERTIES
    LABELS [==[phasegate;op_${op};workers${extra_labels}]==] FIXTURES_CLEANUP [==[${op}_workers]==])
" PARENT_SCOPE)
endfunction()

# The <op>/e2e test of the CTest include file, in OUT (empty when the op directory has
# no integrated <op>_impl.py): `run --e2e`, the integrated impl against the op-level
# golden on every final output (docs/pypto.md "The end-to-end check"), with the case
# tests' options, report session and warm workers. Reads: op, op_dir, contract,
# persistent, workers_fixture, ctest_timeout, extra_labels, work_dir.
function(_phasegate_e2e_test out)
  get_filename_component(contract_dir "${contract}" DIRECTORY)
  get_filename_component(contract_dir_name "${contract_dir}" NAME)
  set(whole_dir "${contract_dir}")
  if(contract_dir_name STREQUAL "eval") # custom/<op>/eval/: the op directory is custom/<op>
    get_filename_component(whole_dir "${contract_dir}" DIRECTORY)
  endif()
  set(${out} "" PARENT_SCOPE)
  if(NOT EXISTS "${whole_dir}/${op}_impl.py")
    return()
  endif()
  set(req "${op}_report")
  if(persistent)
    list(APPEND req "${workers_fixture}")
  endif()
  set(timeout "")
  if(ctest_timeout)
    set(timeout " TIMEOUT ${ctest_timeout}")
  endif()
  _phasegate_bracket(q_op_dir "${op_dir}")
  _phasegate_bracket(q_work_dir "${work_dir}")
  set(${out} "\
  add_test([==[${op}/e2e]==] \"\${_pg_runner}\" run --e2e --op-dir ${q_op_dir} \${_pg_run_extra})
  set_tests_properties([==[${op}/e2e]==] PROPERTIES
    LABELS [==[phasegate;op_${op};e2e${extra_labels}]==] FIXTURES_REQUIRED [==[${req}]==]
    WORKING_DIRECTORY ${q_work_dir}${timeout}
    SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION [==[\\[phasegate\\] SKIPPED]==])
" PARENT_SCOPE)
endfunction()

# Step 7: the include file CTest reads (TEST_INCLUDE_FILES): resolved paths (generator
# expressions) first, then either the discovered tests (with the contract, composition
# and workers tests) or the NOT_BUILT placeholder.
# Reads: op, arg_MODES, arg_LABELS, base, multi, discovery_mode, gate, persistent,
# op_dir, tests_file, contract, suite, discover_script, discover_defs, impl_spec,
# runner_file, run_extra, golden_args, python_args, serve_control, work_dir,
# serve_memory_limit, report_dir, ctest_timeout, workers_fixture, _PHASEGATE_CMAKE_DIR.
# Sets: nothing (writes
# <op>_include.cmake, with the <op>/report/session test every case test requires).
function(_phasegate_write_include)
  foreach(v op_dir tests_file discover_script CMAKE_COMMAND impl_spec runner_file)
    _phasegate_bracket(q_${v} "${${v}}")
  endforeach()
  set(q_run_extra "")
  foreach(a IN LISTS run_extra)
    _phasegate_bracket(q "${a}")
    string(APPEND q_run_extra " ${q}")
  endforeach()
  set(selftest_extra "")
  foreach(a IN LISTS golden_args python_args) # python: the interpreter of Python goldens too
    _phasegate_bracket(q "${a}")
    string(APPEND selftest_extra " ${q}")
  endforeach()
  set(validate_extra "") # python: the interpreter of eval/test_inputs.py (the knobs check)
  foreach(a IN LISTS python_args)
    _phasegate_bracket(q "${a}")
    string(APPEND validate_extra " ${q}")
  endforeach()

  set(discover_call "")
  if(discovery_mode STREQUAL "PRE_TEST")
    _phasegate_pre_test_call(discover_call "${discover_defs}" "${discover_script}"
                             "${contract}" "${suite}")
  endif()

  set(extra_labels "")
  foreach(l IN LISTS arg_LABELS)
    string(APPEND extra_labels ";${l}")
  endforeach()
  set(contract_fixture "")
  set(composition_fixture "")
  if(gate)
    set(contract_fixture " FIXTURES_SETUP [==[${op}_contract]==]")
    set(composition_fixture " FIXTURES_REQUIRED [==[${op}_contract]==]")
  endif()
  _phasegate_bracket(q_session_def "-DPG_SESSION_FILE=${report_dir}/${op}/.session")
  _phasegate_bracket(q_session_script "${_PHASEGATE_CMAKE_DIR}/PhaseGateSession.cmake")
  _phasegate_e2e_test(e2e_test)
  set(workers_tests "")
  if(persistent)
    _phasegate_workers_tests(workers_tests "${op}" "${arg_MODES}" "${serve_memory_limit}"
      "${python_args}" "${serve_control}" "${op_dir}" "${work_dir}" "${extra_labels}")
  endif()
  set(include_content "\
# Generated by phasegate_add_op(${op}) for CTest: do not edit.
set(_pg_cmake ${q_CMAKE_COMMAND})
set(_pg_runner ${q_runner_file})
set(_pg_impl ${q_impl_spec})
set(_pg_run_extra${q_run_extra})
if(EXISTS \"\${_pg_runner}\")
${discover_call}endif()
if(EXISTS \"\${_pg_runner}\" AND EXISTS ${q_tests_file})
  add_test([==[${op}/contract]==] \"\${_pg_runner}\" validate --op-dir ${q_op_dir}${validate_extra})
  set_tests_properties([==[${op}/contract]==] PROPERTIES
    LABELS [==[phasegate;op_${op};contract${extra_labels}]==]${contract_fixture})
  add_test([==[${op}/composition]==] \"\${_pg_runner}\" selftest --op-dir ${q_op_dir}${selftest_extra} --suite-strength)
  set_tests_properties([==[${op}/composition]==] PROPERTIES
    LABELS [==[phasegate;op_${op};composition${extra_labels}]==]${composition_fixture}
    SKIP_RETURN_CODE 77 SKIP_REGULAR_EXPRESSION [==[\\[phasegate\\] SKIPPED]==])
${e2e_test}  add_test([==[${op}/report/session]==] \"\${_pg_cmake}\" ${q_session_def} -P ${q_session_script})
  set_tests_properties([==[${op}/report/session]==] PROPERTIES
    LABELS [==[phasegate;op_${op};report${extra_labels}]==] FIXTURES_SETUP [==[${op}_report]==])
${workers_tests}  include(${q_tests_file})
else()
  add_test([==[${op}/NOT_BUILT]==] \"\${_pg_cmake}\" [==[-DPHASEGATE_NOT_BUILT=${op}]==]
           [==[-DPHASEGATE_BUILD_DIR=${CMAKE_BINARY_DIR}]==] -P ${q_discover_script})
  set_tests_properties([==[${op}/NOT_BUILT]==] PROPERTIES LABELS [==[phasegate;op_${op}]==])
endif()
")

  set(ctest_include "${base}_include.cmake")
  if(multi)
    # One file per configuration (CONDITION $<CONFIG:...> crashes CMake 3.25 here).
    file(GENERATE OUTPUT "${base}_include-$<CONFIG>.cmake" CONTENT "${include_content}")
    file(WRITE "${ctest_include}"
      "include(\"${base}_include-\${CTEST_CONFIGURATION_TYPE}.cmake\" OPTIONAL)\n")
  else()
    file(GENERATE OUTPUT "${ctest_include}" CONTENT "${include_content}")
  endif()
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${ctest_include}")
endfunction()

# Step 8: discovery, now (CONFIGURE), after the runner's build (POST_BUILD) or left to
# CTest (PRE_TEST), and the target phasegate_discover_<op>.
# Reads: op, _PHASEGATE_CMAKE_DIR, discovery_mode, contract, suite, discover_script,
# discover_defs, tests_file, runner_target, runner_now, runner_file.
# Sets: nothing (the target; at configure time, the tests file).
function(_phasegate_discovery)
  set(discover_deps "${contract}" "${suite}" "${discover_script}"
                    "${_PHASEGATE_CMAKE_DIR}/PhaseGateQuote.cmake")
  if(discovery_mode STREQUAL "CONFIGURE")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 "${contract}" "${suite}" "${runner_now}")
    include("${discover_script}")
    foreach(d IN LISTS discover_defs)
      string(REGEX REPLACE "^-D([A-Z_]+)=(.*)$" "\\1" k "${d}")
      string(REGEX REPLACE "^-D([A-Z_]+)=(.*)$" "\\2" v "${d}")
      set(${k} "${v}")
    endforeach()
    set(PG_RUNNER "${runner_now}")
    set(PG_CONTRACT "${contract}")
    set(PG_SUITE "${suite}")
    phasegate__discover_if_stale()
    add_custom_target(phasegate_discover_${op})
  elseif(discovery_mode STREQUAL "POST_BUILD")
    if(runner_target)
      list(APPEND discover_deps ${runner_target})
    else()
      list(APPEND discover_deps "${runner_now}")
    endif()
    add_custom_command(
      OUTPUT "${tests_file}"
      COMMAND "${CMAKE_COMMAND}" ${discover_defs} "-DPG_RUNNER=${runner_file}"
              -P "${discover_script}"
      DEPENDS ${discover_deps}
      COMMENT "phasegate: discovering the tests of ${op}"
      VERBATIM)
    add_custom_target(phasegate_discover_${op} ALL DEPENDS "${tests_file}")
  else()
    add_custom_target(phasegate_discover_${op})
  endif()
  if(runner_target)
    add_dependencies(phasegate_discover_${op} ${runner_target})
  endif()
endfunction()

# Step 9: verify_all, verify_<op> and verify_<op>_M<k> (see _phasegate_verify_target).
function(_phasegate_verify_targets op deps runner_file report_dir n_modules)
  string(REGEX REPLACE "([.+])" "\\\\\\1" op_re "${op}")
  set(v "${runner_file}" "${report_dir}")
  _phasegate_verify_target(verify_all "${deps}" ${v} "^phasegate$")
  _phasegate_verify_target(verify_${op} "${deps}" ${v} "^op_${op_re}$")
  if(n_modules GREATER 0)
    foreach(k RANGE 1 ${n_modules})
      _phasegate_verify_target(verify_${op}_M${k} "${deps}" ${v} "^op_${op_re}$" "^phase_M${k}$")
    endforeach()
  endif()
endfunction()

function(phasegate_add_op op)
  block(SCOPE_FOR POLICIES)
  cmake_policy(VERSION 3.25)
  # The helper scripts live next to this file (build tree or installed package).
  set(_PHASEGATE_CMAKE_DIR "${CMAKE_CURRENT_FUNCTION_LIST_DIR}")

  set(options "")
  set(oneValueArgs OP_DIR IMPL IMPL_PYTHON FUNCTION REPLAY GOLDEN TIMEOUT GATE REPORT_DIR
                   DISCOVERY_MODE DISCOVERY_TIMEOUT RUNNER PHASES INSPECT)
  set(multiValueArgs IMPL_COMMAND IMPL_WORKER MODES LEVELS RESOURCES LABELS EXTRA_ARGS)
  cmake_parse_arguments(PARSE_ARGV 1 arg "${options}" "${oneValueArgs}" "${multiValueArgs}")

  # The steps above, in this order (each names what it reads and sets).
  _phasegate_check_args()        # op_dir contract suite n_modules phases
  _phasegate_impl_spec()         # impl_spec impl_deps persistent python_args golden_args
  _phasegate_check_options()     # levels_csv ctest_timeout gate discovery_timeout report_dir
  _phasegate_runner()            # runner_target runner_now runner_file discovery_mode

  set_property(GLOBAL APPEND PROPERTY PHASEGATE_OPS "${op}")
  set_property(GLOBAL PROPERTY PHASEGATE_OP_${op}_DIR "${CMAKE_CURRENT_SOURCE_DIR}")

  # Case tests and <op>/workers/start run here; the daemon's control socket.
  set(work_dir "${CMAKE_CURRENT_BINARY_DIR}")
  set(serve_control "${CMAKE_CURRENT_BINARY_DIR}/${op}_serve")
  _phasegate_run_args()          # run_extra persistent workers_fixture serve_memory_limit

  set(base "${CMAKE_CURRENT_BINARY_DIR}/${op}")   # prefix of the generated files
  get_property(multi GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  set(discover_script "${_PHASEGATE_CMAKE_DIR}/PhaseGateDiscover.cmake")
  _phasegate_discover_defs()     # tests_file signature discover_defs
  _phasegate_write_include()
  _phasegate_discovery()
  set(deps phasegate_discover_${op} ${impl_deps})
  _phasegate_verify_targets("${op}" "${deps}" "${runner_file}" "${report_dir}" "${n_modules}")
  endblock()
endfunction()
cmake_policy(POP)
