# Writes build_info.hpp with the current git hash; run at every build (not just at configure), so
# `shakedown --version` names the commit that was actually built. Only touches the file when it
# changes, so an unchanged tree does not recompile.
# Inputs: SOURCE_DIR, TEMPLATE, OUTPUT, PROJECT_VERSION, BUILD_TYPE.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE SHAKEDOWN_GIT_HASH OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT SHAKEDOWN_GIT_HASH)
  set(SHAKEDOWN_GIT_HASH "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE dirty ERROR_QUIET)
  if(dirty)
    string(APPEND SHAKEDOWN_GIT_HASH "-dirty")
  endif()
endif()
set(CMAKE_BUILD_TYPE ${BUILD_TYPE})
configure_file(${TEMPLATE} ${OUTPUT}.tmp @ONLY)
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUTPUT}.tmp ${OUTPUT})
file(REMOVE ${OUTPUT}.tmp)
