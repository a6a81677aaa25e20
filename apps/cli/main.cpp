// The athanor executable; everything lives in the cli layer (athanor/cli/app.h).
#include <iostream>

#include "athanor/cli/app.h"

int main(int argc, char** argv) { return ath::cli::athanor_main(argc, argv, std::cout, std::cerr); }
