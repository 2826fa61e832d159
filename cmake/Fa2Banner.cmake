# Prints the heading the walkthrough shows before each demo (on stdout, like the demos).
string(LENGTH "${TITLE}" n)
string(REPEAT "=" ${n} rule)
execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "")
execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${rule}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${TITLE}     [${DEMO}]")
execute_process(COMMAND "${CMAKE_COMMAND}" -E echo "${rule}")
