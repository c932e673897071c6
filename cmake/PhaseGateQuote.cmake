# phasegate — the bracket quoting shared by PhaseGate.cmake (the CTest include file it
# generates) and PhaseGateDiscover.cmake (the tests file it writes). A file of its own
# because PhaseGateDiscover.cmake also runs on its own (`cmake -P`, or include()d by
# CTest) where the functions of PhaseGate.cmake do not exist. Installed beside them.

include_guard(GLOBAL)
# Functions keep the policies of their definition: CTest and `cmake -P` start with none.
cmake_policy(PUSH)
cmake_policy(VERSION 3.25)

# Quotes TEXT as a CMake bracket argument that TEXT cannot close early: as many `=`
# signs as needed.
function(_phasegate_bracket out text)
  set(eq "=")
  while(TRUE)
    string(FIND "${text}]" "]${eq}]" pos)
    if(pos EQUAL -1)
      break()
    endif()
    string(APPEND eq "=")
  endwhile()
  set(${out} "[${eq}[${text}]${eq}]" PARENT_SCOPE)
endfunction()

cmake_policy(POP)
